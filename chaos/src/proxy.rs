//! A TCP proxy between one replica and Redis that injects what a network and a
//! Redis client inflict on state calls: latency (the ack path times out while
//! the scripts it sent still run), replies that never arrive (the connection
//! drops right after a request was forwarded), and requests that run twice (a
//! copy of the replica's whole byte stream replayed on a second connection a
//! moment later, as a client that re-sends after a reconnect does).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// How long after the original a mirrored copy of a request reaches Redis.
const MIRROR_DELAY: Duration = Duration::from_millis(100);

/// How long the proxy waits after forwarding a request before it drops the
/// connection, so Redis has run it but its reply is lost.
const DROP_AFTER: Duration = Duration::from_millis(20);

#[derive(Debug, Default)]
struct Faults {
    delay_ms: AtomicU64,
    drop_replies: AtomicBool,
    mirror: AtomicBool,
}

/// A running proxy; dropping it stops accepting.
#[derive(Debug)]
pub struct Proxy {
    /// The port to connect to instead of Redis's.
    pub port: u16,
    faults: Arc<Faults>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Forwards 127.0.0.1:`port` to 127.0.0.1:`upstream`.
    pub async fn start(upstream: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let faults = Arc::new(Faults::default());
        let shared = Arc::clone(&faults);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let faults = Arc::clone(&shared);
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await {
                        // Mirroring is decided per connection, from its first
                        // byte, so the copy is a faithful client of its own.
                        let mirror = if faults.mirror.load(Ordering::SeqCst) {
                            TcpStream::connect(("127.0.0.1", upstream)).await.ok()
                        } else {
                            None
                        };
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        pipe(client, server, mirror, faults).await;
                    }
                });
            }
        });
        Ok(Self { port, faults, task })
    }

    /// Delays every chunk from the replica to Redis by `ms` from now on.
    pub fn set_delay(&self, ms: u64) {
        self.faults.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// While on, every request is forwarded and then its connection dropped:
    /// Redis runs it, and the reply never reaches the replica.
    pub fn drop_replies(&self, on: bool) {
        self.faults.drop_replies.store(on, Ordering::SeqCst);
    }

    /// From now on, new connections are mirrored: every request runs twice,
    /// the copy `MIRROR_DELAY` later, its reply discarded.
    pub fn mirror(&self, on: bool) {
        self.faults.mirror.store(on, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn pipe(
    client: TcpStream,
    server: TcpStream,
    mirror: Option<TcpStream>,
    faults: Arc<Faults>,
) {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let copies = mirror.map(spawn_mirror);
    let up = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match cr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let ms = faults.delay_ms.load(Ordering::SeqCst);
            if ms > 0 {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            if let Some(tx) = &copies {
                let _ = tx.send((tokio::time::Instant::now(), buf[..n].to_vec()));
            }
            if sw.write_all(&buf[..n]).await.is_err() {
                return;
            }
            if faults.drop_replies.load(Ordering::SeqCst) {
                tokio::time::sleep(DROP_AFTER).await;
                return;
            }
        }
    };
    let down = async move {
        let _ = tokio::io::copy(&mut sr, &mut cw).await;
    };
    // Either direction ending ends both: a dropped request loses its reply.
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}

/// A second connection that replays what it is sent `MIRROR_DELAY` later and
/// throws its replies away.
fn spawn_mirror(conn: TcpStream) -> mpsc::UnboundedSender<(tokio::time::Instant, Vec<u8>)> {
    let (tx, mut rx) = mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
    let (mut r, mut w): (_, OwnedWriteHalf) = conn.into_split();
    tokio::spawn(async move {
        let mut sink = vec![0u8; 16 * 1024];
        while let Ok(n) = r.read(&mut sink).await {
            if n == 0 {
                return;
            }
        }
    });
    tokio::spawn(async move {
        while let Some((at, chunk)) = rx.recv().await {
            tokio::time::sleep_until(at + MIRROR_DELAY).await;
            if w.write_all(&chunk).await.is_err() {
                return;
            }
        }
    });
    tx
}
