//! File downloads against local servers: the body streamed and capped (a
//! declared length over the cap refused before reading, a chunked body cut
//! where it passes the cap), redirects followed with the credential only on
//! the first origin, a redirect loop ended, a stalled body cut off.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use bytes::Bytes;
use chat_core::AdapterError;
use chat_http::{Proxy, Transport, TransportError};
use futures_util::StreamExt;
use http::HeaderValue;

type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

fn record(seen: &Seen, path: &str, headers: &HeaderMap) {
    let auth = headers
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap().to_owned());
    seen.lock().unwrap().push((path.to_owned(), auth));
}

/// Serves `app` on a free local port; its base URL.
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// A file server that records each request's path and `Authorization`.
/// `/file` is 10 bytes with a length; `/chunked` is 3 × 4 bytes without
/// one; `/stall` sends 2 bytes, then nothing; `/to?u=…` redirects to `u`;
/// `/loop` redirects to itself.
async fn files() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = Router::new()
        .route(
            "/file",
            get(|State(s): State<Seen>, h: HeaderMap| async move {
                record(&s, "/file", &h);
                ([(header::CONTENT_TYPE, "image/png")], "0123456789")
            }),
        )
        .route(
            "/chunked",
            get(|State(s): State<Seen>, h: HeaderMap| async move {
                record(&s, "/chunked", &h);
                let parts = ["abcd", "efgh", "ijkl"].map(|p| Ok::<_, Infallible>(Bytes::from(p)));
                Body::from_stream(futures_util::stream::iter(parts))
            }),
        )
        .route(
            "/stall",
            get(|State(s): State<Seen>, h: HeaderMap| async move {
                record(&s, "/stall", &h);
                let first =
                    futures_util::stream::once(async { Ok::<_, Infallible>(Bytes::from("ab")) });
                let never = futures_util::stream::pending();
                Body::from_stream(first.chain(never))
            }),
        )
        .route(
            "/to",
            get(
                |State(s): State<Seen>, h: HeaderMap, q: axum::extract::RawQuery| async move {
                    record(&s, "/to", &h);
                    let to = q.0.unwrap().strip_prefix("u=").unwrap().to_owned();
                    Redirect::temporary(&to).into_response()
                },
            ),
        )
        .route(
            "/loop",
            get(|State(s): State<Seen>, h: HeaderMap| async move {
                record(&s, "/loop", &h);
                Response::builder()
                    .status(StatusCode::FOUND)
                    .header(header::LOCATION, "/loop")
                    .body(Body::empty())
                    .unwrap()
            }),
        )
        .with_state(Arc::clone(&seen));
    (serve(app).await, seen)
}

fn transport() -> Transport {
    Transport::new(&Proxy::None, "test").unwrap()
}

fn token() -> HeaderValue {
    HeaderValue::from_static("Bearer xoxb-secret")
}

const STEP: Duration = Duration::from_secs(2);

#[tokio::test]
async fn a_file_streams_with_its_type_and_length() {
    let (base, seen) = files().await;
    let uri = format!("{base}/file").parse().unwrap();
    let (status, download) = transport()
        .download(uri, Some(&token()), 64, STEP)
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(download.content_type(), Some("image/png"));
    assert_eq!(download.length(), Some(10));
    assert_eq!(download.bytes().await.unwrap(), "0123456789");
    assert_eq!(
        seen.lock().unwrap()[0],
        ("/file".to_owned(), Some("Bearer xoxb-secret".to_owned()))
    );
}

#[tokio::test]
async fn a_declared_length_over_the_cap_is_refused_before_reading() {
    let (base, _) = files().await;
    let uri = format!("{base}/file").parse().unwrap();
    let (_, mut download) = transport().download(uri, None, 9, STEP).await.unwrap();
    let first = download.next().await.unwrap();
    assert!(
        matches!(first, Err(AdapterError::TooLarge { limit: 9 })),
        "{first:?}"
    );
    assert!(download.next().await.is_none(), "nothing after the refusal");
}

#[tokio::test]
async fn a_chunked_body_is_cut_where_it_passes_the_cap() {
    let (base, _) = files().await;
    let uri = format!("{base}/chunked").parse().unwrap();
    let (_, mut download) = transport().download(uri, None, 6, STEP).await.unwrap();
    assert_eq!(download.length(), None);
    let mut got = Vec::new();
    let mut refused = false;
    while let Some(chunk) = download.next().await {
        match chunk {
            Ok(bytes) => got.extend_from_slice(&bytes),
            Err(AdapterError::TooLarge { limit: 6 }) => refused = true,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(refused);
    assert!(
        got.len() <= 6,
        "never more than the cap handed out: {got:?}"
    );
}

#[tokio::test]
async fn a_redirect_keeps_the_credential_on_its_origin_and_drops_it_elsewhere() {
    let (first, seen_first) = files().await;
    let (other, seen_other) = files().await;

    // Same origin: the credential follows.
    let uri = format!("{first}/to?u=/file").parse().unwrap();
    let (status, d) = transport()
        .download(uri, Some(&token()), 64, STEP)
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(d.bytes().await.unwrap(), "0123456789");
    let seen = seen_first.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter()
            .all(|(_, auth)| auth.as_deref() == Some("Bearer xoxb-secret"))
    );

    // Another origin (another port): followed without it.
    let uri = format!("{first}/to?u={other}/file").parse().unwrap();
    let (status, d) = transport()
        .download(uri, Some(&token()), 64, STEP)
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(d.bytes().await.unwrap(), "0123456789");
    assert_eq!(
        seen_other.lock().unwrap().clone(),
        [("/file".to_owned(), None)],
        "the token never reaches another origin"
    );
}

#[tokio::test]
async fn a_redirect_loop_ends() {
    let (base, seen) = files().await;
    let uri = format!("{base}/loop").parse().unwrap();
    let err = transport().download(uri, None, 64, STEP).await.unwrap_err();
    assert!(matches!(err, TransportError::TooManyRedirects), "{err}");
    assert_eq!(seen.lock().unwrap().len(), chat_http::MAX_REDIRECTS + 1);
}

#[tokio::test]
async fn a_stalled_body_is_cut_off_after_the_step_timeout() {
    let (base, _) = files().await;
    let uri = format!("{base}/stall").parse().unwrap();
    let (_, download) = transport()
        .download(uri, None, 64, Duration::from_millis(200))
        .await
        .unwrap();
    let err = download.bytes().await.unwrap_err();
    assert!(matches!(err, AdapterError::Transport(_)), "{err}");
}
