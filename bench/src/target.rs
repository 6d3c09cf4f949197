//! Where the load goes: loopback addresses only.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::cli::MAX_DURATION;

pub(crate) fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

/// `host[:port]` as a loopback socket address (`localhost` is 127.0.0.1);
/// anything else is refused.
pub fn loopback_addr(host_port: &str, default_port: u16) -> io::Result<SocketAddr> {
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') || h.starts_with('[') => (
            h,
            p.parse::<u16>()
                .map_err(|_| invalid(format!("bad port in {host_port:?}")))?,
        ),
        _ => (host_port, default_port),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip = if host.eq_ignore_ascii_case("localhost") {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        host.parse::<IpAddr>()
            .map_err(|_| invalid(format!("{host:?} is not a loopback address")))?
    };
    if !ip.is_loopback() {
        return Err(invalid(format!(
            "{ip} is not a loopback address: the load generator sends to loopback only"
        )));
    }
    Ok(SocketAddr::new(ip, port))
}

/// Where `http://host:port/path` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The loopback address.
    pub addr: SocketAddr,
    /// The `Host` header.
    pub host: String,
    /// The request path.
    pub path: String,
}

/// Parses an `http://` URL on loopback.
pub fn parse_url(url: &str) -> io::Result<Target> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| invalid("the URL must start with http://"))?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    Ok(Target {
        addr: loopback_addr(host, 80)?,
        host: host.to_owned(),
        path: path.to_owned(),
    })
}

pub(crate) fn secs(s: f64, what: &str) -> io::Result<Duration> {
    if !s.is_finite() || s < 0.0 {
        return Err(invalid(format!("{what} must be a non-negative number")));
    }
    let d = Duration::from_secs_f64(s);
    if d > MAX_DURATION {
        return Err(invalid(format!("{what} is capped at {MAX_DURATION:?}")));
    }
    Ok(d)
}

#[cfg(test)]
#[allow(clippy::panic_in_result_fn)]
mod tests {
    type TestResult = Result<(), Box<dyn std::error::Error>>;

    use super::*;

    #[test]
    fn only_loopback_urls() -> TestResult {
        let t = parse_url("http://127.0.0.1:3000/webhooks/slack")?;
        assert_eq!(t.addr, "127.0.0.1:3000".parse()?);
        assert_eq!(t.path, "/webhooks/slack");
        assert_eq!(parse_url("http://localhost:8080")?.addr.port(), 8080);
        assert!(parse_url("http://[::1]:3000/x").is_ok());
        for bad in [
            "http://10.0.0.1:3000/x",
            "http://192.168.1.1/x",
            "http://example.com/x",
            "https://127.0.0.1/x",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
        Ok(())
    }
}
