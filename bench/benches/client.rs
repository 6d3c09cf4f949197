//! What an HTTP/1.1 client costs the load generator per request: `loadgen`'s
//! own client (`chat_bench::http::Conn`) against hyper's HTTP/1 client
//! connection, each sending the same signed Slack delivery over one keep-alive
//! loopback connection to the same minimal server, one request in flight.
//!
//! The server and the loopback syscalls cost the same in both; the difference
//! is the client's. Run by `cargo xtask bench micro`; the figures and what they
//! decide are in docs/benchmarks.md.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;

use bytes::Bytes;
use chat_bench::http::{Conn, Side};
use chat_bench::payload::{Deliveries, Shape};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

fn main() {
    divan::main();
}

const RESPONSE: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok";

/// A current-thread runtime serving fixed 200 answers on a loopback port.
fn server() -> (Runtime, SocketAddr) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut conn = Conn::new(stream);
                while let Ok(Some(_)) = conn.read(Side::Request).await {
                    if conn.write(RESPONSE).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (rt, addr)
}

/// One signed delivery: the whole request as `loadgen` writes it, and its
/// head and body apart for a client that builds its own.
struct Delivery {
    raw: Vec<u8>,
    headers: Vec<(String, String)>,
    body: Bytes,
}

fn delivery() -> Delivery {
    let deliveries = Deliveries::new(Shape::default(), 1);
    let (raw, body_len) = deliveries.request("127.0.0.1", "/webhooks/slack", 1, 1_700_000_000);
    let split = raw.len() - body_len;
    let head = std::str::from_utf8(&raw[..split]).unwrap();
    let headers = head
        .split("\r\n")
        .skip(1)
        .filter_map(|l| l.split_once(": "))
        .filter(|(name, _)| !name.eq_ignore_ascii_case("host"))
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    Delivery {
        body: Bytes::copy_from_slice(&raw[split..]),
        raw,
        headers,
    }
}

#[divan::bench]
fn own_client(bencher: divan::Bencher<'_, '_>) {
    let (rt, addr) = server();
    let d = delivery();
    let mut conn = rt.block_on(Conn::connect(addr)).unwrap();
    bencher.bench_local(|| {
        rt.block_on(async {
            // Like loadgen: the request is built as bytes, then sent.
            let request = d.raw.clone();
            let answer = conn.roundtrip(&request).await.unwrap();
            assert_eq!(answer.status(), 200);
        });
    });
}

#[divan::bench]
fn hyper_client(bencher: divan::Bencher<'_, '_>) {
    let (rt, addr) = server();
    let d = delivery();
    let mut sender: SendRequest<Full<Bytes>> = rt.block_on(async {
        let stream = TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(connection);
        sender
    });
    let host = addr.to_string();
    bencher.bench_local(|| {
        rt.block_on(async {
            let mut request = http::Request::post("/webhooks/slack").header("host", &host);
            for (name, value) in &d.headers {
                request = request.header(name.as_str(), value.as_str());
            }
            let request = request.body(Full::new(d.body.clone())).unwrap();
            let answer = sender.send_request(request).await.unwrap();
            assert_eq!(answer.status(), 200);
            let body = answer.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(&body[..], b"ok");
        });
    });
}
