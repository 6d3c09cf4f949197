//! The shared outbound rules against a local server: rate limits waited out
//! and retried with the same body, never past the deadline or the retry
//! count; redirects not followed; answers capped; a stalled server cut off.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use bytes::Bytes;
use chat_core::AdapterError;
use chat_http::{Answer, Attempt, HttpOptions, MAX_ANSWER_BYTES, Proxy, RetryPolicy, Transport};
use tokio::time::Instant;

/// 429 waits `Retry-After`; other non-2xx is a status error; 2xx the body.
struct Plain;

impl RetryPolicy for Plain {
    type Output = Bytes;

    fn classify(&self, answer: Answer, retries: u32) -> Attempt<Bytes> {
        if answer.status == http::StatusCode::TOO_MANY_REQUESTS {
            let wait =
                chat_http::retry_after(&answer).unwrap_or_else(|| chat_http::backoff(retries));
            return Attempt::RetryAfter(wait);
        }
        if !answer.status.is_success() {
            return Attempt::Done(Err(AdapterError::Status(answer.status)));
        }
        Attempt::Done(Ok(answer.body))
    }
}

/// Serves `app` on a free local port; its base URL.
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn options() -> HttpOptions {
    HttpOptions::default()
        .proxy(Proxy::None)
        .request_timeout(Duration::from_secs(2))
        .retry_budget(Duration::from_secs(5))
}

/// Calls `{base}/call` through a fresh transport with the [`Plain`] policy.
async fn send(
    base: &str,
    options: &HttpOptions,
    deadline: Option<Instant>,
) -> Result<Bytes, AdapterError> {
    let transport = Transport::new(&Proxy::None, "test").unwrap();
    chat_http::call(
        &transport,
        options,
        deadline,
        &request(base, "/call"),
        &Plain,
    )
    .await
}

fn request(base: &str, path: &str) -> http::Request<Bytes> {
    http::Request::post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(Bytes::from_static(br#"{"id":"same"}"#))
        .unwrap()
}

/// Answers 429 (`Retry-After: retry_after`) `limited` times, then echoes the
/// body; counts the requests and checks each carried the same body.
fn limited(limited: usize, retry_after: &'static str, seen: Arc<AtomicUsize>) -> Router {
    Router::new().route(
        "/call",
        post(move |headers: HeaderMap, body: Bytes| {
            let seen = Arc::clone(&seen);
            async move {
                assert_eq!(&body[..], br#"{"id":"same"}"#);
                assert!(
                    headers["user-agent"]
                        .to_str()
                        .unwrap()
                        .starts_with("chat-rs/")
                );
                let n = seen.fetch_add(1, Ordering::SeqCst);
                if n < limited {
                    (
                        StatusCode::TOO_MANY_REQUESTS,
                        [("retry-after", retry_after)],
                        "",
                    )
                        .into_response()
                } else {
                    body.into_response()
                }
            }
        }),
    )
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_and_the_same_request_sent_again() {
    let seen = Arc::new(AtomicUsize::new(0));
    let base = serve(limited(2, "0.05", Arc::clone(&seen))).await;
    let started = Instant::now();
    let body = send(&base, &options(), None).await.unwrap();
    assert_eq!(&body[..], br#"{"id":"same"}"#);
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    assert!(started.elapsed() >= Duration::from_millis(100));
}

#[tokio::test]
async fn retries_stop_at_the_count_with_the_wait_asked_for() {
    let seen = Arc::new(AtomicUsize::new(0));
    let base = serve(limited(usize::MAX, "0.01", Arc::clone(&seen))).await;
    let err = send(&base, &options().max_retries(2), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, AdapterError::RateLimited { retry_after } if retry_after == Duration::from_millis(10)),
        "{err:?}"
    );
    assert_eq!(
        seen.load(Ordering::SeqCst),
        3,
        "the first try and two retries"
    );
}

#[tokio::test]
async fn a_wait_past_the_deadline_gives_up_at_once() {
    let seen = Arc::new(AtomicUsize::new(0));
    let base = serve(limited(usize::MAX, "3600", Arc::clone(&seen))).await;
    let started = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(2);
    let err = send(&base, &options(), Some(deadline)).await.unwrap_err();
    assert!(matches!(err, AdapterError::RateLimited { .. }), "{err:?}");
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn a_redirect_is_an_answer_never_followed() {
    let followed = Arc::new(AtomicUsize::new(0));
    let f = Arc::clone(&followed);
    let app = Router::new()
        .route(
            "/call",
            post(|| async { (StatusCode::FOUND, [("location", "/elsewhere")], "") }),
        )
        .route(
            "/elsewhere",
            post(move || {
                f.fetch_add(1, Ordering::SeqCst);
                async { "followed" }
            }),
        );
    let base = serve(app).await;
    let err = send(&base, &options(), None).await.unwrap_err();
    assert!(
        matches!(err, AdapterError::Status(s) if s == StatusCode::FOUND),
        "{err:?}"
    );
    assert_eq!(followed.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_answer_over_the_cap_fails_the_call() {
    let app = Router::new().route("/call", post(|| async { vec![b'x'; MAX_ANSWER_BYTES + 1] }));
    let base = serve(app).await;
    let err = send(&base, &options(), None).await.unwrap_err();
    assert!(matches!(err, AdapterError::Transport(_)), "{err:?}");
}

#[tokio::test]
async fn a_stalled_server_is_cut_off_at_the_deadline() {
    let app = Router::new().route(
        "/call",
        post(|| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            "late"
        }),
    );
    let base = serve(app).await;
    let started = Instant::now();
    let deadline = Instant::now() + Duration::from_millis(300);
    let err = send(&base, &options(), Some(deadline)).await.unwrap_err();
    assert!(matches!(err, AdapterError::DeadlineExceeded), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_proxy_that_cannot_tunnel_is_refused_when_built() {
    let proxy = Proxy::Http {
        url: "socks5://user:secret@proxy.example:1080".into(),
        no_proxy: String::new(),
    };
    let err = Transport::new(&proxy, "test").unwrap_err();
    assert!(
        matches!(err, chat_http::BuildError::InvalidProxy(_)),
        "{err:?}"
    );
    assert!(!err.to_string().contains("secret"), "{err}");
}

#[tokio::test]
async fn every_call_names_its_host_and_port_and_the_product() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let app = Router::new().route(
        "/call",
        post(move |headers: HeaderMap| {
            let record = Arc::clone(&record);
            async move {
                let header = |name: &str| {
                    headers
                        .get_all(name)
                        .iter()
                        .map(|v| v.to_str().unwrap().to_owned())
                        .collect::<Vec<_>>()
                };
                record
                    .lock()
                    .unwrap()
                    .push((header("host"), header("user-agent")));
                "ok"
            }
        }),
    );
    let base = serve(app).await;
    let transport = Transport::new(&Proxy::None, "test").unwrap();
    for _ in 0..3 {
        chat_http::call(
            &transport,
            &options(),
            None,
            &request(&base, "/call"),
            &Plain,
        )
        .await
        .unwrap();
    }
    let authority = base.trim_start_matches("http://").to_owned();
    let agent = format!("chat-rs/{} (test)", env!("CARGO_PKG_VERSION"));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    for (host, user_agent) in seen {
        // One `Host` each time (the port is not HTTP's default), as written
        // on the first call.
        assert_eq!(host, vec![authority.clone()]);
        assert_eq!(user_agent, vec![agent.clone()]);
    }
}
