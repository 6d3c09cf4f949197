//! Slow and hostile clients against three replicas: connections that trickle
//! their headers, bodies that stall after a few bytes, and chunked bodies of
//! one byte per chunk past the size cap — while real signed deliveries keep
//! arriving. Every real delivery must be acknowledged within Slack's 3 s, the
//! replicas must stay up, and the attackers' connections must be closed at
//! their deadlines, giving back their file descriptors.

use std::path::Path;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::cluster::{Redis, Replica};
use crate::sender::{self, Sender};

/// How many of each attacker, full run (quick: a tenth).
const SLOW_HEADERS: usize = 2000;
const SLOW_BODIES: usize = 200;
const CHUNK_BOMBS: usize = 50;
/// Real deliveries sent while the attackers hold their connections.
const REAL: usize = 60;

/// What the run measured.
#[derive(Debug, Default)]
pub struct Figures {
    /// Attackers opened: slow headers, slow bodies, chunk bombs.
    pub attackers: (usize, usize, usize),
    /// Real deliveries acknowledged (2xx) within 3 s, of `REAL`.
    pub answered: usize,
    /// Their ack latency, p50 and p99 (ms).
    pub p50_ms: f64,
    /// p99 (ms).
    pub p99_ms: f64,
    /// Per replica: file descriptors before, at the peak, after.
    pub fds: Vec<(usize, usize, usize)>,
    /// Per replica: resident memory before and at the peak (MiB).
    pub rss_mib: Vec<(f64, f64)>,
    /// Attacker connections the replicas closed by themselves.
    pub closed: usize,
    /// Chunk bombs answered 413 or 408.
    pub bombs_refused: usize,
}

/// Runs the scenario; `Ok((breaches, figures))`, `Err` for a harness failure.
pub async fn run(bin: &Path, quick: bool) -> Result<(Vec<String>, Figures), String> {
    let scale = if quick { 10 } else { 1 };
    let (n_headers, n_bodies, n_bombs) = (
        SLOW_HEADERS / scale,
        SLOW_BODIES / scale,
        CHUNK_BOMBS / scale,
    );
    let redis = Redis::start().map_err(|e| format!("redis: {e}"))?;
    let mut replicas = Vec::new();
    for i in 0..3 {
        let name = format!("r{i}");
        let env = crate::cluster::door_env(&redis.url(), "chaos-slow-clients");
        replicas.push(
            Replica::start(bin, &name, &env)
                .await
                .map_err(|e| e.to_string())?,
        );
    }
    let before: Vec<(usize, u64)> = replicas.iter().filter_map(Replica::usage).collect();
    let ports: Vec<u16> = replicas.iter().map(|r| r.port).collect();

    // The attackers.
    let mut held = Vec::new();
    for i in 0..n_headers {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", ports[i % 3])).await {
            let _ = s
                .write_all(b"POST /webhooks/slack HTTP/1.1\r\nhost: x\r\n")
                .await;
            held.push(s);
        }
    }
    for i in 0..n_bodies {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", ports[i % 3])).await {
            let _ = s
                .write_all(b"POST /webhooks/slack HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{\"token\":")
                .await;
            held.push(s);
        }
    }
    let bombs: Vec<_> = (0..n_bombs)
        .map(|i| tokio::spawn(chunk_bomb(ports[i % 3])))
        .collect();

    // Real deliveries meanwhile.
    let sender = Sender::new(replicas.iter().map(Replica::base).collect(), Vec::new());
    let mut latencies = Vec::new();
    let mut peak: Vec<(usize, u64)> = before.clone();
    for n in 0..REAL {
        let d = sender::mention(
            &format!("EvSlow{n}"),
            "T1",
            "C1",
            &format!("{n}.0"),
            &format!("{n}.0"),
            "hello",
            false,
        );
        let started = Instant::now();
        let (status, _) = sender.attempt(&d, n, 0).await;
        if (200..300).contains(&status) {
            latencies.push(started.elapsed());
        }
        for (p, r) in peak.iter_mut().zip(&replicas) {
            if let Some((fds, rss)) = r.usage() {
                *p = (p.0.max(fds), p.1.max(rss));
            }
        }
    }
    let mut bombs_refused = 0;
    for b in bombs {
        if matches!(b.await, Ok(Some(408 | 413))) {
            bombs_refused += 1;
        }
    }

    // The replicas close what the attackers hold open.
    let mut closed = 0;
    let deadline = Instant::now() + Duration::from_secs(15);
    for mut s in held.drain(..) {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut rest = Vec::new();
        if tokio::time::timeout(left, s.read_to_end(&mut rest))
            .await
            .is_ok()
        {
            closed += 1;
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after: Vec<(usize, u64)> = replicas.iter().filter_map(Replica::usage).collect();

    latencies.sort();
    let q = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p).ceil() as usize).saturating_sub(1))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let figures = Figures {
        attackers: (n_headers, n_bodies, n_bombs),
        answered: latencies
            .iter()
            .filter(|l| **l < Duration::from_secs(3))
            .count(),
        p50_ms: q(0.50),
        p99_ms: q(0.99),
        fds: before
            .iter()
            .zip(&peak)
            .zip(&after)
            .map(|((b, p), a)| (b.0, p.0, a.0))
            .collect(),
        rss_mib: before
            .iter()
            .zip(&peak)
            .map(|(b, p)| (b.1 as f64 / 1024.0, p.1 as f64 / 1024.0))
            .collect(),
        closed,
        bombs_refused,
    };

    let mut breaches = Vec::new();
    if figures.answered < REAL {
        breaches.push(format!(
            "{} of {REAL} real deliveries acknowledged within 3 s",
            figures.answered
        ));
    }
    if closed < n_headers + n_bodies {
        breaches.push(format!(
            "{} of {} attacker connections still open after their deadlines",
            n_headers + n_bodies - closed,
            n_headers + n_bodies
        ));
    }
    if bombs_refused < n_bombs {
        breaches.push(format!(
            "{bombs_refused} of {n_bombs} chunk bombs refused with 408/413"
        ));
    }
    for (i, r) in replicas.iter().enumerate() {
        if !r.alive() || r.usage().is_none() {
            breaches.push(format!("replica r{i} is gone"));
        }
    }
    for (i, (b, _, a)) in figures.fds.iter().enumerate() {
        if *a > b + 50 {
            breaches.push(format!(
                "replica r{i} kept {} file descriptors ({b} before)",
                a
            ));
        }
    }
    for r in &mut replicas {
        r.terminate(Duration::from_secs(5)).await;
    }
    drop(redis);
    Ok((breaches, figures))
}

/// A chunked body of one byte per chunk, sent as fast as the socket takes it,
/// past the 1 MiB cap; the status the replica answered, if any.
async fn chunk_bomb(port: u16) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let head = "POST /webhooks/slack HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nx-slack-request-timestamp: 1\r\nx-slack-signature: v0=00\r\n\r\n";
    s.write_all(head.as_bytes()).await.ok()?;
    let chunk = b"1\r\nx\r\n".repeat(4096);
    let (mut reader, mut writer) = s.into_split();
    let write = tokio::spawn(async move {
        for _ in 0..((1024 * 1024) / 4096 + 16) {
            if writer.write_all(&chunk).await.is_err() {
                return;
            }
        }
    });
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        let mut buf = [0u8; 512];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    answer.extend_from_slice(&buf[..n]);
                    if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            }
        }
    })
    .await;
    write.abort();
    read.ok()?;
    let text = String::from_utf8_lossy(&answer);
    text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}
