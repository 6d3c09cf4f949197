//! How each runtime [`Verdict`] is said to Linear. Linear counts any answer
//! other than exactly 200 as a failed delivery and retries it (after 1 minute,
//! 1 hour and 6 hours), so only what must be retried gets another status.

use bytes::Bytes;
use chat_core::{Reply, Verdict};
use http::{Response, StatusCode, header};

/// The answer to a delivery for `verdict`.
pub(crate) fn respond(verdict: &Verdict) -> Response<Bytes> {
    match verdict {
        Verdict::Accepted | Verdict::Duplicate | Verdict::Ignored => text(StatusCode::OK, "OK"),
        // Linear has no interactions to answer: only a platform body is
        // sent; any other reply is an acknowledgement.
        Verdict::Reply(Reply::Platform(json)) => {
            let body = serde_json::to_vec(json).unwrap_or_default();
            build(StatusCode::OK, "application/json", Bytes::from(body))
        }
        Verdict::Reply(_) => text(StatusCode::OK, "OK"),
        // Still running at the deadline: Linear's retry is a duplicate of the
        // work in progress.
        Verdict::AtCapacity | Verdict::Working => {
            text(StatusCode::SERVICE_UNAVAILABLE, "at capacity")
        }
        Verdict::Rejected(e) => {
            let status = e.status();
            text(status, status.canonical_reason().unwrap_or("rejected"))
        }
        _ => text(StatusCode::INTERNAL_SERVER_ERROR, "failed"),
    }
}

fn text(status: StatusCode, body: &'static str) -> Response<Bytes> {
    build(
        status,
        "text/plain; charset=utf-8",
        Bytes::from_static(body.as_bytes()),
    )
}

fn build(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Bytes> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    response
}

#[cfg(test)]
mod tests {
    use chat_core::WebhookError;

    use super::*;

    #[test]
    fn every_verdict_has_its_status() {
        let cases = [
            (Verdict::Accepted, 200),
            (Verdict::Duplicate, 200),
            (Verdict::Ignored, 200),
            (
                Verdict::Reply(Reply::platform(serde_json::json!({"ok": true}))),
                200,
            ),
            (Verdict::AtCapacity, 503),
            (Verdict::Failed, 500),
            (Verdict::Rejected(WebhookError::BadSignature), 401),
            (Verdict::Rejected(WebhookError::StaleTimestamp), 401),
            (
                Verdict::Rejected(WebhookError::MissingHeader("Linear-Signature")),
                401,
            ),
            (Verdict::Rejected(WebhookError::Malformed("x".into())), 400),
            (Verdict::Rejected(WebhookError::BodyRead), 400),
            (Verdict::Rejected(WebhookError::TooLarge { limit: 1 }), 413),
            (Verdict::Rejected(WebhookError::MethodNotAllowed), 405),
        ];
        for (verdict, status) in cases {
            assert_eq!(respond(&verdict).status(), status, "{verdict:?}");
        }
    }
}
