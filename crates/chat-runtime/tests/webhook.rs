//! The webhook service: mounted in axum and served over a real socket by hyper,
//! and its answers at the door (size cap, method, signature, malformed body).

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bytes::Bytes;
use chat_runtime::{Bot, Concurrency, DispatchOptions, RuntimeOptions};
use chat_state_memory::MemoryState;
use chat_testkit::ScriptedAdapter;
use http_body_util::{BodyExt, Full};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

fn bot(adapter: &ScriptedAdapter) -> Bot {
    Bot::builder()
        .state(MemoryState::new())
        .adapter(adapter.clone())
        .options(
            RuntimeOptions::default()
                .dispatch(DispatchOptions::deferred(Duration::from_secs(10)))
                .concurrency(Concurrency::queue()),
        )
        .on_new_mention(
            |ctx: chat_runtime::Ctx, e: chat_runtime::Event| async move {
                ctx.thread()
                    .post(format!("echo: {}", e.text().unwrap_or("")))
                    .await?;
                Ok::<(), chat_runtime::BoxError>(())
            },
        )
        .build()
        .unwrap()
}

async fn status(bot: &Bot, name: &str, req: http::Request<Bytes>) -> u16 {
    let req = req.map(Full::new);
    bot.webhook(name)
        .oneshot(req)
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn answers_at_the_door() {
    let adapter = ScriptedAdapter::with_body_limit("test", 512);
    let bot = bot(&adapter);
    let event = adapter.mention("T1", "C1", "1", "a", "hi");
    // Unsigned → 401; malformed → 400; too large → 413; wrong method → 405;
    // unknown adapter → 404; then the real thing → 200.
    assert_eq!(
        status(
            &bot,
            "test",
            adapter.raw_request(Bytes::from_static(b"{}"), false)
        )
        .await,
        401
    );
    assert_eq!(
        status(
            &bot,
            "test",
            adapter.raw_request(Bytes::from_static(b"not json"), true)
        )
        .await,
        400
    );
    let big = Bytes::from(vec![b' '; 4096]);
    assert_eq!(
        status(&bot, "test", adapter.raw_request(big, true)).await,
        413
    );
    let mut get = adapter.request(&event);
    *get.method_mut() = http::Method::GET;
    assert_eq!(status(&bot, "test", get).await, 405);
    assert_eq!(status(&bot, "nope", adapter.request(&event)).await, 404);
    assert_eq!(status(&bot, "test", adapter.request(&event)).await, 200);
    bot.shutdown(Duration::from_secs(5)).await;
    assert_eq!(adapter.posts(), ["echo: hi"]);
}

#[tokio::test]
async fn a_body_without_length_is_capped_while_it_streams() {
    let adapter = ScriptedAdapter::with_body_limit("test", 512);
    let bot = bot(&adapter);
    // A streamed body: no Content-Length, so the cap applies while reading.
    let chunks: Vec<Result<http_body::Frame<Bytes>, std::convert::Infallible>> = (0..10)
        .map(|_| Ok(http_body::Frame::data(Bytes::from(vec![b'x'; 100]))))
        .collect();
    let body = http_body_util::StreamBody::new(futures_util::stream::iter(chunks));
    let mut req = http::Request::new(body);
    *req.method_mut() = http::Method::POST;
    req.headers_mut().insert(
        chat_testkit::SIGNATURE_HEADER,
        http::HeaderValue::from_static("valid"),
    );
    let r = bot.webhook("test").oneshot(req).await.unwrap();
    assert_eq!(r.status(), 413);
}

#[tokio::test]
async fn serves_through_axum_and_hyper_over_a_socket() {
    let adapter = ScriptedAdapter::new("test");
    let bot = bot(&adapter);
    let app = axum::Router::new().route_service("/webhooks/test", bot.webhook("test"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let event = adapter.mention("T1", "C1", "1", "a", "over the wire");
    let body = serde_json::to_vec(&event).unwrap();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /webhooks/test HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n{}: valid\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        chat_testkit::SIGNATURE_HEADER,
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");

    bot.shutdown(Duration::from_secs(5)).await;
    assert_eq!(adapter.posts(), ["echo: over the wire"]);
    server.abort();
}

#[tokio::test]
async fn the_service_is_clone_and_infallible() {
    fn assert_service<S>(_: &S)
    where
        S: tower::Service<http::Request<Full<Bytes>>, Error = std::convert::Infallible>
            + Clone
            + Send
            + 'static,
    {
    }
    let adapter = ScriptedAdapter::new("test");
    let svc = bot(&adapter).webhook("test");
    assert_service(&svc);
    let _ = svc
        .clone()
        .oneshot(
            adapter
                .request(&adapter.mention("T", "C", "1", "x", "y"))
                .map(Full::new),
        )
        .await
        .unwrap()
        .into_body()
        .collect()
        .await;
}

/// Frames of a streamed body.
type Frames = std::pin::Pin<
    Box<dyn futures_util::Stream<Item = Result<http_body::Frame<Bytes>, std::io::Error>> + Send>,
>;

/// A body as a stream of frames; `then_stall` keeps the body open forever
/// after its frames, as a slow or hostile client does.
fn streamed(chunks: Vec<Bytes>, then_stall: bool) -> http_body_util::StreamBody<Frames> {
    use futures_util::StreamExt;
    let frames = futures_util::stream::iter(
        chunks
            .into_iter()
            .map(|c| Ok::<_, std::io::Error>(http_body::Frame::data(c))),
    );
    let stream: Frames = if then_stall {
        Box::pin(frames.chain(futures_util::stream::pending()))
    } else {
        Box::pin(frames)
    };
    http_body_util::StreamBody::new(stream)
}

fn with_body<B>(template: http::Request<Bytes>, body: B) -> http::Request<B> {
    let (parts, _) = template.into_parts();
    http::Request::from_parts(parts, body)
}

/// A body sent one byte per frame is read into one buffer and delivered; past
/// the cap it is refused 413 however small its frames.
#[tokio::test]
async fn a_body_in_one_byte_frames_is_read_whole_and_capped() {
    let adapter = ScriptedAdapter::with_body_limit("test", 512);
    let bot = bot(&adapter);
    let event = adapter.mention("T1", "C1", "1", "tiny", "hi");
    let request = adapter.request(&event);
    let bytes = request.body().clone();
    assert!(bytes.len() < 512);
    let one_by_one: Vec<Bytes> = bytes
        .iter()
        .map(|b| Bytes::copy_from_slice(&[*b]))
        .collect();
    let answer = bot
        .webhook("test")
        .oneshot(with_body(request, streamed(one_by_one, false)))
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);

    let too_big: Vec<Bytes> = (0..513).map(|_| Bytes::from_static(b"x")).collect();
    let answer = bot
        .webhook("test")
        .oneshot(with_body(
            adapter.raw_request(Bytes::new(), true),
            streamed(too_big, false),
        ))
        .await
        .unwrap();
    assert_eq!(answer.status(), 413);
}

/// A client that sends part of its body and stalls is answered 408 at the
/// body deadline, before anything is verified or stored.
#[tokio::test(start_paused = true)]
async fn a_stalled_body_is_answered_408_at_the_body_deadline() {
    let adapter = ScriptedAdapter::new("test");
    let bot = bot(&adapter);
    let started = tokio::time::Instant::now();
    let answer = bot
        .webhook("test")
        .oneshot(with_body(
            adapter.raw_request(Bytes::new(), true),
            streamed(vec![Bytes::from_static(b"{partial")], true),
        ))
        .await
        .unwrap();
    assert_eq!(answer.status(), 408);
    assert_eq!(started.elapsed(), RuntimeOptions::default().timeouts.body);
    assert!(adapter.posts().is_empty());
}
