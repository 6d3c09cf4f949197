//! The hardened server (feature `server`) over real sockets: a slow client's
//! headers are cut off, a flood beyond the in-flight limit is shed with 503, a
//! request past its deadline is answered 503, and shutdown stops it.

#![cfg(feature = "server")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use chat_runtime::server::{ServerOptions, serve};
use http_body_util::Full;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, oneshot};

/// Answers `ok`, or waits on `gate` first for `/slow`.
fn app(
    gate: Arc<Notify>,
) -> impl tower::Service<
    http::Request<hyper::body::Incoming>,
    Response = http::Response<Full<Bytes>>,
    Error = Infallible,
    Future = impl Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(move |req: http::Request<hyper::body::Incoming>| {
        let gate = Arc::clone(&gate);
        async move {
            if req.uri().path() == "/slow" {
                gate.notified().await;
            }
            Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from_static(b"ok"))))
        }
    })
}

async fn start(
    options: ServerOptions,
    gate: Arc<Notify>,
) -> (u16, oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        serve(listener, app(gate), options, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    (port, stop, server)
}

async fn get(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).await.unwrap();
    answer
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_cut_off() {
    let options = ServerOptions::default().header_read_timeout(Duration::from_millis(200));
    let (port, stop, server) = start(options, Arc::new(Notify::new())).await;
    let mut slow = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    slow.write_all(b"POST /webhooks/slack HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut rest)).await;
    assert!(
        closed.is_ok(),
        "the connection stayed open past the header deadline"
    );
    // Meanwhile and after, real requests are answered.
    assert!(get(port, "/").await.starts_with("HTTP/1.1 200"));
    stop.send(()).unwrap();
    server.await.unwrap();
}

#[tokio::test]
async fn past_the_in_flight_limit_requests_are_shed_with_503() {
    let gate = Arc::new(Notify::new());
    let options = ServerOptions::default().max_in_flight(1);
    let (port, stop, server) = start(options, Arc::clone(&gate)).await;
    let held = tokio::spawn(async move { get(port, "/slow").await });
    // The first request holds the only place once it is in the service.
    let mut shed = String::new();
    for _ in 0..200 {
        shed = get(port, "/").await;
        if shed.starts_with("HTTP/1.1 503") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(shed.starts_with("HTTP/1.1 503"), "{shed}");
    assert!(shed.ends_with("overloaded"), "{shed}");
    gate.notify_waiters();
    gate.notify_one();
    assert!(held.await.unwrap().starts_with("HTTP/1.1 200"));
    stop.send(()).unwrap();
    server.await.unwrap();
}

#[tokio::test]
async fn a_request_past_its_deadline_is_answered_503() {
    let options = ServerOptions::default().request_timeout(Duration::from_millis(100));
    let (port, stop, server) = start(options, Arc::new(Notify::new())).await;
    let answer = get(port, "/slow").await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.ends_with("request timed out"), "{answer}");
    stop.send(()).unwrap();
    server.await.unwrap();
}
