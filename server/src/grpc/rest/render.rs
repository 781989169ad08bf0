//! The REST answers: the original's shapes for what succeeded, and a JSON error with the gRPC
//! status's message (mapped to an HTTP status) for what did not.
//!
//! Every answer carries `Cache-Control: no-store`: random bytes must never be served twice by a
//! cache between the gateway and its caller.

use entropy_proto::v1::{CheckQualityResponse, GetStatusResponse};
use http::header::{CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderValue, Response, StatusCode};
use serde_json::json;
use tonic::Code;
use tonic::body::Body;

use super::params::BadRequest;

/// `Content-Type` of a JSON answer.
pub(crate) const JSON: &str = "application/json";
/// `Content-Type` of a text answer (hex, base64, one UUID).
pub(crate) const TEXT: &str = "text/plain; charset=utf-8";
/// `Content-Type` of raw bytes.
pub(crate) const BINARY: &str = "application/octet-stream";

/// An answer with `status`, `content_type` and `body`.
pub(crate) fn answer(
    status: StatusCode,
    content_type: &'static str,
    body: Vec<u8>,
) -> Response<Body> {
    let mut response = Response::new(Body::new(http_body_full(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn http_body_full(body: Vec<u8>) -> http_body_util::Full<prost::bytes::Bytes> {
    http_body_util::Full::new(body.into())
}

/// A JSON value as an answer.
pub(crate) fn json(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    answer(status, JSON, value.to_string().into_bytes())
}

/// The HTTP status for a gRPC status code (as Google's HTTP mapping of gRPC codes has it).
pub(crate) fn http_status(code: Code) -> StatusCode {
    match code {
        Code::Ok => StatusCode::OK,
        Code::InvalidArgument | Code::OutOfRange | Code::FailedPrecondition => {
            StatusCode::BAD_REQUEST
        }
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        // 499 Client Closed Request, as nginx and Google name it.
        Code::Cancelled => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
        Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        Code::Unknown | Code::Internal | Code::DataLoss => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The JSON error for a gRPC status: its code's name, the HTTP status and the message as the
/// gRPC call had them; `Retry-After` (seconds, rounded up) and `Retry-After-Ms` when the status
/// carried a `retry-after-ms`; `WWW-Authenticate: Bearer` on 401.
pub(crate) fn failed(status: &tonic::Status) -> Response<Body> {
    let http = http_status(status.code());
    let mut response = error_json(http, code_name(status.code()), status.message(), None);
    let retry_ms = status
        .metadata()
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let headers = response.headers_mut();
    if let Some(ms) = retry_ms {
        headers.insert("retry-after-ms", HeaderValue::from(ms));
        headers.insert(RETRY_AFTER, HeaderValue::from(ms.div_ceil(1000).max(1)));
    }
    if http == StatusCode::UNAUTHORIZED {
        headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

/// The JSON error for a request refused before any call.
pub(crate) fn refused(bad: &BadRequest) -> Response<Body> {
    let code = match bad.status {
        StatusCode::NOT_FOUND => "NOT_FOUND",
        StatusCode::METHOD_NOT_ALLOWED => "METHOD_NOT_ALLOWED",
        _ => "INVALID_ARGUMENT",
    };
    error_json(bad.status, code, &bad.message, bad.field.as_deref())
}

/// `{"error": {"status": .., "code": .., "message": .., "field": ..}}`.
fn error_json(
    status: StatusCode,
    code: &str,
    message: &str,
    field: Option<&str>,
) -> Response<Body> {
    let mut error = json!({ "status": status.as_u16(), "code": code, "message": message });
    if let Some(field) = field {
        error["field"] = json!(field);
    }
    json(status, &json!({ "error": error }))
}

/// A gRPC code's name as the gRPC spec spells it.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// The original's `/api/status` object from GetStatus. Its fields keep their names and types;
/// `status` is `unhealthy` when the gateway is not serving, `degraded` below the pool's low
/// watermark, else `healthy`. `data_freshness_seconds` is the age of the newest chunk (the
/// original gave its oldest byte's). The gateway does not count requests, so
/// `total_requests_served` and `requests_per_second` are `null`.
pub(crate) fn status(s: &GetStatusResponse, now_unix_ms: i64) -> serde_json::Value {
    let degraded = s.pool_bytes < s.pool_low_watermark_bytes;
    let health = match (s.serving, degraded) {
        (false, _) => "unhealthy",
        (true, true) => "degraded",
        (true, false) => "healthy",
    };
    let mut warnings = Vec::new();
    if !s.not_serving_reason.is_empty() {
        warnings.push(s.not_serving_reason.clone());
    }
    if degraded {
        warnings.push(format!(
            "pool below its low watermark: {} of {} bytes",
            s.pool_bytes, s.pool_low_watermark_bytes
        ));
    }
    let fill = if s.pool_capacity_bytes == 0 {
        0.0
    } else {
        s.pool_bytes as f64 * 100.0 / s.pool_capacity_bytes as f64
    };
    let last = s.last_chunk_age_ms.and_then(|age| {
        let at_ms = i128::from(now_unix_ms) - i128::from(age);
        let at = time::OffsetDateTime::from_unix_timestamp_nanos(at_ms * 1_000_000).ok()?;
        at.format(&time::format_description::well_known::Rfc3339).ok()
    });
    json!({
        "status": health,
        "buffer_fill_percent": fill,
        "buffer_bytes_available": s.pool_bytes,
        "last_data_received": last,
        "data_freshness_seconds": s.last_chunk_age_ms.map(|ms| ms / 1000),
        "uptime_seconds": s.uptime_ms / 1000,
        "total_requests_served": null,
        "total_bytes_served": s.served_bytes_total,
        "requests_per_second": null,
        "warnings": warnings,
    })
}

/// The original's `/api/test/monte-carlo` object from CheckQuality's Monte Carlo estimate (ent's
/// method, 24-bit coordinate pairs), with the gateway's OS CSPRNG on as many bytes as the
/// pseudo-random comparison. The verdicts use the original's thresholds on the error in percent.
pub(crate) fn monte_carlo(r: &CheckQualityResponse) -> serde_json::Value {
    let pi = r.pi.unwrap_or_default();
    let error = pi.error.abs();
    let percent = error / std::f64::consts::PI * 100.0;
    let convergence = match percent {
        p if p < 0.01 => "excellent",
        p if p < 0.1 => "good",
        p if p < 1.0 => "fair",
        _ => "poor",
    };
    let quality = match percent {
        p if p < 0.1 => "high_quality",
        p if p < 1.0 => "acceptable",
        _ => "poor_quality",
    };
    let pseudo = r.pi_os_reference.as_ref().map(|os| {
        let pseudo_error = os.error.abs();
        json!({
            "quantum_error": error,
            "pseudo_error": pseudo_error,
            "improvement_factor": if pseudo_error > 0.0 { pseudo_error / error.max(1e-10) } else { 1.0 },
        })
    });
    json!({
        "estimated_pi": pi.estimate,
        "error": error,
        "error_percent": percent,
        "iterations": pi.points,
        "convergence_rate": convergence,
        "quality_assessment": quality,
        "note": "Monte Carlo pi measures statistical uniformity, not unpredictability; the \
                 sample was drawn from the pool, tested and wiped, never served. CheckQuality \
                 reports the full battery (entropy, chi-square, FIPS 140-2).",
        "quantum_vs_pseudo": pseudo,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_an_http_status_and_a_name() {
        for n in 0..=16 {
            let code = Code::from_i32(n);
            let http = http_status(code);
            assert_eq!(http == StatusCode::OK, code == Code::Ok, "{code:?}");
            assert!(!code_name(code).is_empty());
        }
        assert_eq!(http_status(Code::ResourceExhausted), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(http_status(Code::Unavailable), StatusCode::SERVICE_UNAVAILABLE);
    }

    #[test]
    fn a_quota_wait_becomes_retry_after_in_seconds_and_ms() {
        let mut status = tonic::Status::resource_exhausted("over quota");
        status.metadata_mut().insert("retry-after-ms", "1200".parse().unwrap());
        let r = failed(&status);
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()["retry-after"], "2");
        assert_eq!(r.headers()["retry-after-ms"], "1200");
        assert_eq!(r.headers()["cache-control"], "no-store");
    }

    #[test]
    fn status_keeps_the_original_fields() {
        let s = GetStatusResponse {
            pool_bytes: 10,
            pool_capacity_bytes: 100,
            pool_low_watermark_bytes: 20,
            serving: true,
            last_chunk_age_ms: Some(1_500),
            uptime_ms: 61_000,
            served_bytes_total: 7,
            ..Default::default()
        };
        let v = status(&s, 1_700_000_000_000);
        assert_eq!(v["status"], "degraded");
        assert_eq!(v["buffer_fill_percent"], 10.0);
        assert_eq!(v["last_data_received"], "2023-11-14T22:13:18.5Z");
        assert_eq!(v["data_freshness_seconds"], 1);
        assert_eq!(v["uptime_seconds"], 61);
        assert!(v["total_requests_served"].is_null());
        assert_eq!(v["warnings"][0], "pool below its low watermark: 10 of 20 bytes");
    }
}
