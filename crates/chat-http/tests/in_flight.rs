//! The cap on requests in flight: a request over it waits its turn within its
//! own timeout and never reaches the server meanwhile, clones share the cap,
//! a request that gave up waiting takes no turn with it, and a burst never
//! has more than the cap at the server at once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use bytes::Bytes;
use chat_http::{HttpOptions, Proxy, Transport, TransportError};
use http::header::HeaderValue;
use tokio::sync::{Semaphore, mpsc};

/// What the server sees: each request's `x-name` as it arrives, and how many
/// are inside at once (now and at most). A request is answered only when the
/// test adds a permit to `gate`.
#[derive(Clone)]
struct Held {
    arrived: mpsc::UnboundedSender<String>,
    gate: Arc<Semaphore>,
    inside: Arc<AtomicUsize>,
    most_inside: Arc<AtomicUsize>,
}

async fn hold(State(held): State<Held>, headers: HeaderMap) -> &'static str {
    let now = held.inside.fetch_add(1, Ordering::SeqCst) + 1;
    held.most_inside.fetch_max(now, Ordering::SeqCst);
    let name = headers
        .get("x-name")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let _ = held.arrived.send(name);
    held.gate.acquire().await.unwrap().forget();
    held.inside.fetch_sub(1, Ordering::SeqCst);
    "{\"ok\":true}"
}

/// Serves [`hold`] on a free local port: its URL, and the server's view.
async fn serve() -> (String, Held, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let held = Held {
        arrived: tx,
        gate: Arc::new(Semaphore::new(0)),
        inside: Arc::default(),
        most_inside: Arc::default(),
    };
    let app = Router::new()
        .route("/hold", post(hold))
        .with_state(held.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hold"), held, rx)
}

fn transport(cap: usize) -> Transport {
    HttpOptions::default()
        .proxy(Proxy::None)
        .max_in_flight(cap)
        .transport("test")
        .unwrap()
}

async fn send(
    t: &Transport,
    url: &str,
    name: &str,
    timeout: Duration,
) -> Result<u16, TransportError> {
    let mut request = http::Request::post(url)
        .body(Bytes::from_static(b"{}"))
        .unwrap();
    request
        .headers_mut()
        .insert("x-name", HeaderValue::from_str(name).unwrap());
    t.send(request, timeout)
        .await
        .map(|answer| answer.status.as_u16())
}

#[tokio::test]
async fn a_request_over_the_cap_waits_within_its_timeout_and_takes_no_turn_with_it() {
    let (url, held, mut arrived) = serve().await;
    let t = transport(1);

    // A is at the server, holding the only turn.
    let first = {
        let (t, url) = (t.clone(), url.clone());
        tokio::spawn(async move { send(&t, &url, "A", Duration::from_secs(10)).await })
    };
    assert_eq!(arrived.recv().await.unwrap(), "A");

    // B, through a clone, waits for the turn until its timeout, and so never
    // reaches the server.
    let second = send(&t.clone(), &url, "B", Duration::from_millis(300)).await;
    assert!(
        matches!(second, Err(TransportError::TimedOut)),
        "{second:?}"
    );
    assert!(
        arrived.try_recv().is_err(),
        "a request over the cap reached the server"
    );

    // A is answered and gives its turn back; B's wait took none: C goes
    // through.
    held.gate.add_permits(1);
    assert_eq!(first.await.unwrap().unwrap(), 200);
    held.gate.add_permits(1);
    assert_eq!(
        send(&t, &url, "C", Duration::from_secs(10)).await.unwrap(),
        200
    );
    assert_eq!(arrived.recv().await.unwrap(), "C");
}

#[tokio::test]
async fn a_burst_never_has_more_than_the_cap_at_the_server() {
    let (url, held, mut arrived) = serve().await;
    let t = transport(3);
    let burst: Vec<_> = (0..12)
        .map(|i| {
            let (t, url) = (t.clone(), url.clone());
            tokio::spawn(
                async move { send(&t, &url, &format!("r{i}"), Duration::from_secs(20)).await },
            )
        })
        .collect();
    // Answer one request each time one arrives: until then the others wait
    // at the server (up to the cap) or in the transport.
    for _ in 0..12 {
        arrived.recv().await.unwrap();
        assert!(held.inside.load(Ordering::SeqCst) <= 3);
        held.gate.add_permits(1);
    }
    for r in burst {
        assert_eq!(r.await.unwrap().unwrap(), 200);
    }
    let most = held.most_inside.load(Ordering::SeqCst);
    assert!(
        (1..=3).contains(&most),
        "{most} requests at the server at once"
    );
}

#[test]
fn the_default_cap_is_slacks_own_sdks() {
    assert_eq!(HttpOptions::default().max_in_flight, 100);
    assert_eq!(chat_http::DEFAULT_MAX_IN_FLIGHT, 100);
}
