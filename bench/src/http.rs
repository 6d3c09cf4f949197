//! Just enough HTTP/1.1 for the load generator and the fake Slack Web API:
//! keep-alive connections, `Content-Length` and chunked bodies, one request at
//! a time per connection.

use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Largest header section read.
const MAX_HEAD: usize = 64 * 1024;
/// Largest body read.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// The start line, the framing headers and the body of one message.
#[derive(Debug, Clone, Default)]
pub struct Message {
    /// The request line or status line.
    pub start: String,
    /// The body.
    pub body: Vec<u8>,
    /// Whether the peer asked to close the connection after this message.
    pub close: bool,
}

impl Message {
    /// The status code of a response (0 when the status line is malformed).
    pub fn status(&self) -> u16 {
        self.start
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }
}

/// Which side a message comes from: a response without framing headers runs to
/// the end of the connection, a request without them has no body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// A request (read by a server).
    Request,
    /// A response (read by a client).
    Response,
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

/// A connection with its read buffer.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    /// Connects (with `TCP_NODELAY`).
    pub async fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        Ok(Self::new(stream))
    }

    /// Wraps an accepted or connected stream.
    pub fn new(stream: TcpStream) -> Self {
        let _ = stream.set_nodelay(true);
        Self {
            stream,
            buf: Vec::with_capacity(4096),
        }
    }

    /// Writes `bytes` (a whole request or response) in one call.
    pub async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// Sends a request and reads its response.
    pub async fn roundtrip(&mut self, request: &[u8]) -> io::Result<Message> {
        self.write(request).await?;
        self.read(Side::Response)
            .await?
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"))
    }

    /// Reads one message; `None` when the peer closed the connection cleanly
    /// before a new one started.
    pub async fn read(&mut self, side: Side) -> io::Result<Option<Message>> {
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i;
            }
            if self.buf.len() > MAX_HEAD {
                return Err(invalid("header section too large"));
            }
            if self.fill().await? == 0 {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "closed inside a header section",
                ));
            }
        };
        let head = std::str::from_utf8(&self.buf[..head_end])
            .map_err(|_| invalid("header section is not UTF-8"))?;
        let mut lines = head.split("\r\n");
        let start = lines.next().unwrap_or_default().to_owned();
        let mut length = None;
        let mut chunked = false;
        let mut close = false;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(
                    value
                        .parse::<usize>()
                        .map_err(|_| invalid("bad content-length"))?,
                );
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.to_ascii_lowercase().contains("chunked");
            } else if name.eq_ignore_ascii_case("connection") {
                close = value.eq_ignore_ascii_case("close");
            }
        }
        self.buf.drain(..head_end + 4);
        let body = if chunked {
            self.chunked_body().await?
        } else if let Some(n) = length {
            if n > MAX_BODY {
                return Err(invalid("body too large"));
            }
            self.exactly(n).await?
        } else if side == Side::Response {
            close = true;
            while self.fill().await? > 0 {
                if self.buf.len() > MAX_BODY {
                    return Err(invalid("body too large"));
                }
            }
            std::mem::take(&mut self.buf)
        } else {
            Vec::new()
        };
        Ok(Some(Message { start, body, close }))
    }

    async fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 8192];
        let n = self.stream.read(&mut chunk).await?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    async fn exactly(&mut self, n: usize) -> io::Result<Vec<u8>> {
        while self.buf.len() < n {
            if self.fill().await? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "closed inside a body",
                ));
            }
        }
        Ok(self.buf.drain(..n).collect())
    }

    async fn line(&mut self) -> io::Result<String> {
        loop {
            if let Some(i) = find(&self.buf, b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 2);
                return Ok(line);
            }
            if self.buf.len() > MAX_HEAD {
                return Err(invalid("chunk line too long"));
            }
            if self.fill().await? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "closed inside a chunk",
                ));
            }
        }
    }

    async fn chunked_body(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line = self.line().await?;
            let size = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size, 16).map_err(|_| invalid("bad chunk size"))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while !self.line().await?.is_empty() {}
                return Ok(body);
            }
            if body.len() + size > MAX_BODY {
                return Err(invalid("body too large"));
            }
            body.extend(self.exactly(size).await?);
            if !self.line().await?.is_empty() {
                return Err(invalid("chunk without CRLF"));
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A `GET` of `path` on `host`, as bytes.
pub fn get(host: &str, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n\r\n").into_bytes()
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    type TestResult = Result<(), Box<dyn std::error::Error>>;

    use super::*;
    use tokio::net::TcpListener;

    async fn serve_once(reply: &'static [u8]) -> std::io::Result<SocketAddr> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let mut conn = Conn::new(stream);
            while let Ok(Some(_)) = conn.read(Side::Request).await {
                if conn.write(reply).await.is_err() {
                    break;
                }
            }
        });
        Ok(addr)
    }

    #[tokio::test]
    async fn content_length_and_keep_alive() -> TestResult {
        let addr = serve_once(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await?;
        let mut c = Conn::connect(addr).await?;
        for _ in 0..3 {
            let m = c.roundtrip(&get("x", "/")).await?;
            assert_eq!(m.status(), 200);
            assert_eq!(m.body, b"ok");
            assert!(!m.close);
        }
        Ok(())
    }

    #[tokio::test]
    async fn chunked_bodies() -> TestResult {
        let addr = serve_once(
            b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
        )
        .await?;
        let mut c = Conn::connect(addr).await?;
        let m = c.roundtrip(&get("x", "/")).await?;
        assert_eq!(m.status(), 503);
        assert_eq!(m.body, b"abcde");
        Ok(())
    }
}
