//! Signature and timestamp verification: the table of the issue, and the
//! answer each failure gets.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use chat_core::Webhook as _;
use std::time::Duration;

use bytes::Bytes;
use chat_core::{Verdict, WebhookError};
use chat_linear::signature;
use common::{NOW_MS, SECRET, adapter, body, builder, parts, parts_signed_with, payloads};
use serde_json::json;

fn created_at(ts: serde_json::Value) -> Bytes {
    let mut v = payloads::session_created();
    v["webhookTimestamp"] = ts;
    body(&v)
}

fn verify(parts: &http::request::Parts, body: &Bytes) -> Result<(), WebhookError> {
    adapter().verify(parts, body)
}

fn status_of(result: Result<(), WebhookError>) -> u16 {
    match result {
        Ok(()) => 200,
        Err(e) => adapter()
            .respond(None, &Verdict::Rejected(e))
            .status()
            .as_u16(),
    }
}

#[test]
fn a_signed_fresh_body_passes() {
    let b = created_at(json!(NOW_MS));
    assert_eq!(verify(&parts(&b), &b), Ok(()));
}

#[test]
fn the_table() {
    let fresh = created_at(json!(NOW_MS));
    let pretty = Bytes::from(
        serde_json::to_vec_pretty(&serde_json::from_slice::<serde_json::Value>(&fresh).unwrap())
            .unwrap(),
    );
    let tampered = Bytes::from(
        String::from_utf8(fresh.to_vec())
            .unwrap()
            .replace("flaky", "fixed"),
    );
    let mut no_ts = payloads::session_created();
    no_ts.as_object_mut().unwrap().remove("webhookTimestamp");
    let no_ts = body(&no_ts);
    let null_ts = created_at(json!(null));
    let string_ts = created_at(json!(NOW_MS.to_string()));
    let float_ts = created_at(json!(NOW_MS as f64 + 0.5));

    struct Case {
        name: &'static str,
        body: Bytes,
        signed_over: Bytes,
        secret: &'static str,
        expect: Result<(), WebhookError>,
    }
    let case = |name, body: &Bytes, expect| Case {
        name,
        body: body.clone(),
        signed_over: body.clone(),
        secret: SECRET,
        expect,
    };
    let cases = vec![
        case("valid", &fresh, Ok(())),
        case("fractional timestamp", &float_ts, Ok(())),
        case(
            "exactly 60 s old",
            &created_at(json!(NOW_MS - 60_000)),
            Ok(()),
        ),
        case(
            "exactly 60 s ahead",
            &created_at(json!(NOW_MS + 60_000)),
            Ok(()),
        ),
        case(
            "stale by 1 ms",
            &created_at(json!(NOW_MS - 60_001)),
            Err(WebhookError::StaleTimestamp),
        ),
        case(
            "an hour old (a replay)",
            &created_at(json!(NOW_MS - 3_600_000)),
            Err(WebhookError::StaleTimestamp),
        ),
        case(
            "future beyond the window",
            &created_at(json!(NOW_MS + 60_001)),
            Err(WebhookError::StaleTimestamp),
        ),
        case(
            "missing timestamp field",
            &no_ts,
            Err(WebhookError::StaleTimestamp),
        ),
        case(
            "null timestamp",
            &null_ts,
            Err(WebhookError::StaleTimestamp),
        ),
        case(
            "timestamp as a string",
            &string_ts,
            Err(WebhookError::StaleTimestamp),
        ),
        Case {
            name: "tampered body",
            body: tampered,
            signed_over: fresh.clone(),
            secret: SECRET,
            expect: Err(WebhookError::BadSignature),
        },
        Case {
            name: "wrong secret",
            body: fresh.clone(),
            signed_over: fresh.clone(),
            secret: "lin_wh_someone_else",
            expect: Err(WebhookError::BadSignature),
        },
        Case {
            name: "re-serialized body",
            body: pretty,
            signed_over: fresh.clone(),
            secret: SECRET,
            expect: Err(WebhookError::BadSignature),
        },
    ];
    for c in cases {
        let p = parts_signed_with(c.secret, &c.signed_over, None);
        assert_eq!(verify(&p, &c.body), c.expect, "{}", c.name);
    }
}

#[test]
fn a_fresh_timestamp_header_cannot_save_a_stale_body() {
    let stale = created_at(json!(NOW_MS - 3_600_000));
    let mut p = parts(&stale);
    p.headers
        .insert("linear-timestamp", NOW_MS.to_string().parse().unwrap());
    p.headers.insert(
        "linear-webhook-timestamp",
        NOW_MS.to_string().parse().unwrap(),
    );
    assert_eq!(verify(&p, &stale), Err(WebhookError::StaleTimestamp));
    assert_eq!(status_of(verify(&p, &stale)), 401);
}

#[test]
fn a_stale_timestamp_header_does_not_fail_a_fresh_body() {
    let fresh = created_at(json!(NOW_MS));
    let mut p = parts(&fresh);
    p.headers.insert("linear-timestamp", "1".parse().unwrap());
    assert_eq!(verify(&p, &fresh), Ok(()));
}

#[test]
fn signature_header_problems() {
    let b = created_at(json!(NOW_MS));
    let good = signature::sign(SECRET, &b);
    let mut missing = parts(&b);
    missing.headers.remove(signature::SIGNATURE_HEADER);
    assert_eq!(
        verify(&missing, &b),
        Err(WebhookError::MissingHeader("Linear-Signature"))
    );
    assert_eq!(status_of(verify(&missing, &b)), 401);

    let malformed = [
        String::new(),
        "zz".repeat(32),
        good[..62].to_owned(),
        format!("{good}00"),
        format!("sha256={good}"),
        format!("{} ", &good[..63]),
        good.replace(|c: char| c.is_ascii_digit(), "g"),
    ];
    for bad in malformed {
        let mut p = parts(&b);
        p.headers
            .insert(signature::SIGNATURE_HEADER, bad.parse().unwrap());
        assert_eq!(verify(&p, &b), Err(WebhookError::BadSignature), "{bad:?}");
        assert_eq!(status_of(verify(&p, &b)), 401);
    }
    // A non-UTF-8 header value.
    let mut p = parts(&b);
    p.headers.insert(
        signature::SIGNATURE_HEADER,
        http::HeaderValue::from_bytes(&[0xff; 64]).unwrap(),
    );
    assert_eq!(verify(&p, &b), Err(WebhookError::BadSignature));

    // The same digest in uppercase hex is the same signature.
    let mut p = parts(&b);
    p.headers.insert(
        signature::SIGNATURE_HEADER,
        good.to_uppercase().parse().unwrap(),
    );
    assert_eq!(verify(&p, &b), Ok(()));
}

#[test]
fn errors_never_carry_the_expected_signature_or_the_secret() {
    let b = created_at(json!(NOW_MS));
    let good = signature::sign(SECRET, &b);
    let mut p = parts(&b);
    p.headers.insert(
        signature::SIGNATURE_HEADER,
        "ab".repeat(32).parse().unwrap(),
    );
    let e = verify(&p, &b).unwrap_err();
    let shown = format!("{e} {e:?}");
    assert!(!shown.contains(&good));
    assert!(!shown.contains(SECRET));
    let debug = format!("{:?}", adapter());
    assert!(!debug.contains(SECRET));
    assert!(!debug.contains("lin_oauth_test_token"));
}

#[test]
fn a_signed_body_that_is_not_json_is_malformed() {
    for raw in [
        &b"not json"[..],
        b"[1760000000000]",
        b"",
        b"{\"webhookTimestamp\":",
    ] {
        let b = Bytes::copy_from_slice(raw);
        let result = verify(&parts(&b), &b);
        assert!(
            matches!(result, Err(WebhookError::Malformed(_))),
            "{raw:?}: {result:?}"
        );
        assert_eq!(status_of(result), 400);
    }
}

#[test]
fn bodies_past_the_cap_are_too_large() {
    let a = builder().max_body_bytes(64).build().unwrap();
    assert_eq!(a.max_body_bytes(), 64);
    let b = created_at(json!(NOW_MS));
    let result = a.verify(&parts(&b), &b);
    assert_eq!(result, Err(WebhookError::TooLarge { limit: 64 }));
    assert_eq!(
        a.respond(None, &Verdict::Rejected(result.unwrap_err()))
            .status(),
        413
    );
}

#[test]
fn the_tolerance_is_configurable() {
    let a = builder()
        .timestamp_tolerance(Duration::from_secs(300))
        .build()
        .unwrap();
    let b = created_at(json!(NOW_MS - 299_000));
    assert_eq!(a.verify(&parts(&b), &b), Ok(()));
    assert_eq!(verify(&parts(&b), &b), Err(WebhookError::StaleTimestamp));
}

#[test]
fn answers_are_exactly_200_for_what_was_taken() {
    let a = adapter();
    for v in [Verdict::Accepted, Verdict::Duplicate, Verdict::Ignored] {
        assert_eq!(a.respond(None, &v).status(), 200, "{v:?}");
    }
    assert_eq!(a.respond(None, &Verdict::AtCapacity).status(), 503);
    assert_eq!(a.respond(None, &Verdict::Failed).status(), 500);
    assert_eq!(
        a.respond(
            None,
            &Verdict::Rejected(WebhookError::Malformed("x".into()))
        )
        .status(),
        400
    );
}

#[test]
fn linear_declares_what_its_api_has_and_nothing_more() {
    use chat_core::{Capability, PlatformAdapter};
    let caps: Vec<Capability> = adapter().capabilities().iter().collect();
    assert_eq!(
        caps,
        [
            Capability::Streams,
            Capability::History,
            Capability::Users,
            Capability::Status,
            Capability::Unreact,
            Capability::Downloads
        ]
    );
}
