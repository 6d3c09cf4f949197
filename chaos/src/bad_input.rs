//! Bad input: malformed, oversized, unsigned, replayed and wrongly typed
//! deliveries get the right 4xx, touch no state, and never take a replica down.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cluster::{Redis, Replica};
use crate::sender::{self, SECRET};

/// One delivery of the corpus and the status it must get.
struct Case {
    name: &'static str,
    method: &'static str,
    body: Vec<u8>,
    timestamp: Option<i64>,
    signature: Option<String>,
    content_type: &'static str,
    expect: u16,
    /// Sent as a client with `Expect: 100-continue` does: the headers (the
    /// body's length declared), then the answer is read before any body. A
    /// server that refuses a body it has not read closes the connection, and a
    /// client still writing it may see the reset before the answer; this is how
    /// a refusal by declared length is checked without that race.
    headers_first: bool,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(0))
        .unwrap_or(0)
}

fn signed(
    name: &'static str,
    body: Vec<u8>,
    at: i64,
    content_type: &'static str,
    expect: u16,
) -> Case {
    let ts = at.to_string();
    let signature = Some(chat_slack::signature::sign(SECRET, &ts, &body));
    Case {
        name,
        method: "POST",
        body,
        timestamp: Some(at),
        signature,
        content_type,
        expect,
        headers_first: false,
    }
}

fn corpus() -> Vec<Case> {
    let valid = sender::mention("EvBad1", "T1", "C1", "1.0", "2.0", "hello", false)
        .body
        .into_bytes();
    let json = "application/json";
    let form = "application/x-www-form-urlencoded";
    vec![
        Case { name: "unsigned", method: "POST", body: valid.clone(), timestamp: None, signature: None, content_type: json, expect: 401, headers_first: false },
        Case {
            name: "wrong signature",
            method: "POST",
            body: valid.clone(),
            timestamp: Some(now()),
            signature: Some(format!("v0={}", "0".repeat(64))),
            content_type: json,
            expect: 401,
            headers_first: false,
        },
        signed("stale (replayed 10 min later)", valid.clone(), now() - 600, json, 401),
        signed("from the future", valid.clone(), now() + 600, json, 401),
        {
            // Signed for one body, sent with another.
            let mut c = signed("tampered body", valid.clone(), now(), json, 401);
            c.body = valid.iter().map(|b| if *b == b'h' { b'j' } else { *b }).collect();
            c
        },
        Case { headers_first: true, ..signed("oversized", vec![b' '; 2 * 1024 * 1024], now(), json, 413) },
        signed("not json", b"{\"type\": \"event_callback\", ".to_vec(), now(), json, 400),
        signed("wrongly typed event", br#"{"type":"event_callback","event_id":"EvBad2","team_id":"T1","event":"not an object"}"#.to_vec(), now(), json, 400),
        signed("wrongly typed fields", br#"{"type":"event_callback","event_id":7,"team_id":["T1"],"event":{"type":"app_mention","ts":1}}"#.to_vec(), now(), json, 400),
        signed("form without a payload", b"nothing=here".to_vec(), now(), form, 400),
        signed("payload that is not json", b"payload=%7Bnot".to_vec(), now(), form, 400),
        Case { name: "GET", method: "GET", body: Vec::new(), timestamp: None, signature: None, content_type: json, expect: 405, headers_first: false },
    ]
}

/// Sends the corpus to one replica; returns the breaches.
pub async fn run(bin: &Path, work: &Path) -> Result<Vec<String>, String> {
    let dir = work.join("bad-input");
    let ledger_dir = dir.join("ledger");
    std::fs::create_dir_all(&ledger_dir).map_err(|e| e.to_string())?;
    let redis = Redis::start().map_err(|e| format!("redis: {e}"))?;
    let prefix = "chaos-bad-input";
    let mut env = crate::cluster::door_env(&redis.url(), prefix);
    env.push((
        "ECHO_LEDGER".to_owned(),
        ledger_dir.join("r0.jsonl").display().to_string(),
    ));
    let mut replica = Replica::start(bin, "r0", &env)
        .await
        .map_err(|e| e.to_string())?;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| e.to_string())?;
    let mut breaches = Vec::new();
    for case in corpus() {
        if case.headers_first {
            match headers_first(replica.port, &case).await {
                Ok(status) if status == case.expect => {}
                Ok(status) => breaches.push(format!(
                    "{}: answered {status}, expected {}",
                    case.name, case.expect
                )),
                Err(e) => breaches.push(format!("{}: no answer ({e})", case.name)),
            }
            continue;
        }
        let url = format!("{}/webhooks/slack", replica.base());
        let mut req = if case.method == "GET" {
            client.get(url)
        } else {
            client.post(url)
        };
        req = req
            .header("content-type", case.content_type)
            .body(case.body);
        if let Some(ts) = case.timestamp {
            req = req.header("x-slack-request-timestamp", ts.to_string());
        }
        if let Some(sig) = case.signature {
            req = req.header("x-slack-signature", sig);
        }
        let status = match req.send().await {
            Ok(r) => r.status().as_u16(),
            Err(e) => {
                breaches.push(format!("{}: no answer ({e})", case.name));
                continue;
            }
        };
        if status != case.expect {
            breaches.push(format!(
                "{}: answered {status}, expected {}",
                case.name, case.expect
            ));
        }
    }
    let alive = client
        .get(format!("{}/healthz", replica.base()))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success());
    if !alive {
        breaches.push("the replica stopped answering".to_owned());
    }
    let keys = redis
        .keys(&format!("{prefix}:*"))
        .map_err(|e| e.to_string())?;
    if !keys.is_empty() {
        breaches.push(format!("state was touched: {keys:?}"));
    }
    replica.terminate(Duration::from_secs(5)).await;
    let lines = crate::ledger::load(&ledger_dir).map_err(|e| e.to_string())?;
    if let Some(l) = lines.iter().find(|l| !l.event_id.is_empty()) {
        breaches.push(format!("an outcome was recorded for bad input: {l:?}"));
    }
    Ok(breaches)
}

/// Sends `case`'s request line and headers only, its body's length declared,
/// and reads the status the server answers before any body arrives.
async fn headers_first(port: u16, case: &Case) -> Result<u16, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let mut head = format!(
        "{} /webhooks/slack HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: {}\r\ncontent-length: {}\r\nexpect: 100-continue\r\n",
        case.method,
        case.content_type,
        case.body.len()
    );
    if let Some(ts) = case.timestamp {
        head.push_str(&format!("x-slack-request-timestamp: {ts}\r\n"));
    }
    if let Some(sig) = &case.signature {
        head.push_str(&format!("x-slack-signature: {sig}\r\n"));
    }
    head.push_str("\r\n");
    let exchange = async {
        let mut conn = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        conn.write_all(head.as_bytes()).await?;
        let mut answer = Vec::new();
        let mut buf = [0_u8; 1024];
        while !answer.windows(2).any(|w| w == b"\r\n") {
            let n = conn.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
        }
        Ok::<_, std::io::Error>(answer)
    };
    let answer = tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .map_err(|_| "no answer within 5 s".to_owned())?
        .map_err(|e| e.to_string())?;
    let line = String::from_utf8_lossy(&answer);
    line.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {line:?}"))
}
