//! The Web API client's HTTP transport at its edges: an answer too large to
//! read, a keep-alive connection reused across calls, `https` calls through an
//! HTTP proxy's `CONNECT` tunnel (with its credentials), and proxies it cannot
//! use refused when the client is built.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chat_core::AdapterError;
use chat_slack::{BuildError, MAX_ANSWER_BYTES, Proxy, SlackClient};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Reads one request head (up to the blank line) from `stream`.
async fn read_head(stream: &mut tokio::net::TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

fn client(base: &str, proxy: Proxy) -> SlackClient {
    SlackClient::builder("xoxb-test-token")
        .base_url(base)
        .proxy(proxy)
        .build()
        .unwrap()
}

/// Serves one answer with `head`, then `body_bytes` bytes of body (in 64 KiB
/// chunks, chunked encoding when `chunked`), then waits for the client to go.
async fn oversized_answer(chunked: bool) -> AdapterError {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let _ = read_head(&mut stream).await;
        let piece = vec![b' '; 64 * 1024];
        if chunked {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
            stream.write_all(head.as_bytes()).await.unwrap();
            // Past the cap, one chunk at a time, until the client hangs up.
            for _ in 0..=(MAX_ANSWER_BYTES / piece.len() + 1) {
                let chunk = format!("{:x}\r\n", piece.len());
                if stream.write_all(chunk.as_bytes()).await.is_err()
                    || stream.write_all(&piece).await.is_err()
                    || stream.write_all(b"\r\n").await.is_err()
                {
                    return;
                }
            }
        } else {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                MAX_ANSWER_BYTES + 1
            );
            stream.write_all(head.as_bytes()).await.unwrap();
            let _ = stream.write_all(&piece).await;
        }
        // Until the client closes the connection.
        let mut rest = [0u8; 1024];
        while matches!(stream.read(&mut rest).await, Ok(n) if n > 0) {}
    });
    let c = client(&format!("http://{addr}/api"), Proxy::None);
    let err = c.call("auth.test", &json!({})).await.unwrap_err();
    drop(c);
    server.await.unwrap();
    err
}

#[tokio::test]
async fn an_answer_declared_larger_than_the_cap_fails_without_being_read() {
    let err = oversized_answer(false).await;
    assert!(matches!(err, AdapterError::Transport(_)), "{err:?}");
    let source = format!("{:?}", std::error::Error::source(&err));
    assert!(source.contains("TooLarge"), "{source}");
}

#[tokio::test]
async fn a_chunked_answer_past_the_cap_fails_at_the_cap() {
    let err = oversized_answer(true).await;
    assert!(matches!(err, AdapterError::Transport(_)), "{err:?}");
    let source = format!("{:?}", std::error::Error::source(&err));
    assert!(source.contains("TooLarge"), "{source}");
}

#[tokio::test]
async fn consecutive_calls_reuse_one_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut answered = 0;
        for _ in 0..3 {
            let head = read_head(&mut stream).await;
            let length: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_owned)
                })
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            let mut body = vec![0u8; length];
            stream.read_exact(&mut body).await.unwrap();
            let answer = br#"{"ok":true}"#;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                answer.len()
            );
            stream.write_all(head.as_bytes()).await.unwrap();
            stream.write_all(answer).await.unwrap();
            answered += 1;
        }
        answered
    });
    let c = client(&format!("http://{addr}/api"), Proxy::None);
    for _ in 0..3 {
        c.call("auth.test", &json!({})).await.unwrap();
    }
    // Three answers on the one accepted connection.
    assert_eq!(server.await.unwrap(), 3);
}

#[tokio::test]
async fn https_calls_go_through_the_proxys_connect_tunnel_with_its_credentials() {
    let proxy = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = proxy.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut stream, _) = proxy.accept().await.unwrap();
        let head = read_head(&mut stream).await;
        stream
            .write_all(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
            .await
            .unwrap();
        head
    });
    let c = client(
        "https://slack.example/api",
        Proxy::Http {
            url: format!("http://bot:s3cret@{addr}"),
            no_proxy: "localhost".into(),
        },
    );
    let err = c.call("auth.test", &json!({})).await.unwrap_err();
    assert!(matches!(err, AdapterError::Transport(_)), "{err:?}");
    let head = server.await.unwrap();
    assert!(
        head.starts_with("CONNECT slack.example:443 HTTP/1.1\r\n"),
        "{head}"
    );
    // base64("bot:s3cret")
    let auth = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("proxy-authorization")
                .then(|| value.trim().to_owned())
        })
        .unwrap();
    assert_eq!(auth, "Basic Ym90OnMzY3JldA==");
}

#[tokio::test]
async fn plain_http_targets_are_reached_directly() {
    // The proxy address accepts nothing: a call through it would fail.
    let unused = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead = unused.local_addr().unwrap();
    drop(unused);
    let fake = chat_testkit::FakeSlack::start().await;
    let c = client(
        fake.base_url(),
        Proxy::Http {
            url: format!("http://{dead}"),
            no_proxy: String::new(),
        },
    );
    c.call("auth.test", &json!({})).await.unwrap();
    assert_eq!(fake.calls().len(), 1);
}

#[tokio::test]
async fn hosts_of_no_proxy_are_reached_directly() {
    let proxy = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = proxy.local_addr().unwrap();
    // Nothing listens at the target: the direct connect is refused.
    let unused = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = unused.local_addr().unwrap();
    drop(unused);
    let c = client(
        &format!("https://{target}/api"),
        Proxy::Http {
            url: format!("http://{addr}"),
            no_proxy: "127.0.0.1".into(),
        },
    );
    let err = c.call("auth.test", &json!({})).await.unwrap_err();
    assert!(matches!(err, AdapterError::Transport(_)), "{err:?}");
    // Had the call gone through the proxy, its connection would be waiting
    // in the proxy's accept queue by now.
    let through_proxy =
        tokio::time::timeout(std::time::Duration::from_millis(50), proxy.accept()).await;
    assert!(through_proxy.is_err(), "the call went through the proxy");
}

#[test]
fn proxies_the_transport_cannot_tunnel_through_are_refused_at_build() {
    for url in [
        "socks5://user:hunter2@127.0.0.1:1080",
        "https://user:hunter2@proxy.example:443",
        "not a url",
    ] {
        let err = SlackClient::builder("xoxb-test-token")
            .proxy(Proxy::Http {
                url: url.into(),
                no_proxy: String::new(),
            })
            .build()
            .unwrap_err();
        assert!(matches!(err, BuildError::InvalidProxy(_)), "{url}: {err:?}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
    let proxy = Proxy::Http {
        url: "http://user:hunter2@proxy.example:3128".into(),
        no_proxy: String::new(),
    };
    let shown = format!("{proxy:?}");
    assert!(
        !shown.contains("hunter2") && shown.contains("proxy.example:3128"),
        "{shown}"
    );
    let builder = SlackClient::builder("xoxb-test-token").proxy(proxy);
    assert!(!format!("{builder:?}").contains("hunter2"));
    // A proxy it can use builds.
    builder.build().unwrap();
}
