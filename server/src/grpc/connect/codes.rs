//! gRPC statuses as Connect errors: the code's name, the HTTP status of a unary error, and the
//! error's JSON (the same object in a unary error body and in a stream's end-of-stream message).
//!
//! The table is the Connect protocol's ("Error Codes"); the message is the gRPC status's own,
//! so a caller reads the same words whichever protocol it speaks.

use http::StatusCode;
use tonic::Code;

/// Connect's name of `code`.
pub(super) fn name(code: Code) -> &'static str {
    match code {
        // An OK status is never an error; a caller asking for its name gets what Connect
        // clients report for a status they cannot read.
        Code::Ok | Code::Unknown => "unknown",
        Code::Cancelled => "canceled",
        Code::InvalidArgument => "invalid_argument",
        Code::DeadlineExceeded => "deadline_exceeded",
        Code::NotFound => "not_found",
        Code::AlreadyExists => "already_exists",
        Code::PermissionDenied => "permission_denied",
        Code::ResourceExhausted => "resource_exhausted",
        Code::FailedPrecondition => "failed_precondition",
        Code::Aborted => "aborted",
        Code::OutOfRange => "out_of_range",
        Code::Unimplemented => "unimplemented",
        Code::Internal => "internal",
        Code::Unavailable => "unavailable",
        Code::DataLoss => "data_loss",
        Code::Unauthenticated => "unauthenticated",
    }
}

/// The HTTP status of a unary response failing with `code`.
pub(super) fn http_status(code: Code) -> StatusCode {
    match code {
        Code::Cancelled => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
        Code::Ok | Code::Unknown | Code::Internal | Code::DataLoss => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => {
            StatusCode::BAD_REQUEST
        }
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
    }
}

/// The Connect error object for `code` and `message`: `{"code": …, "message": …}`.
pub(super) fn error_json(code: Code, message: &str) -> serde_json::Value {
    let mut error = serde_json::Map::new();
    error.insert("code".into(), name(code).into());
    if !message.is_empty() {
        error.insert("message".into(), message.into());
    }
    serde_json::Value::Object(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_connects_name_and_status() {
        let table = [
            (Code::Cancelled, "canceled", 499),
            (Code::Unknown, "unknown", 500),
            (Code::InvalidArgument, "invalid_argument", 400),
            (Code::DeadlineExceeded, "deadline_exceeded", 504),
            (Code::NotFound, "not_found", 404),
            (Code::AlreadyExists, "already_exists", 409),
            (Code::PermissionDenied, "permission_denied", 403),
            (Code::ResourceExhausted, "resource_exhausted", 429),
            (Code::FailedPrecondition, "failed_precondition", 400),
            (Code::Aborted, "aborted", 409),
            (Code::OutOfRange, "out_of_range", 400),
            (Code::Unimplemented, "unimplemented", 501),
            (Code::Internal, "internal", 500),
            (Code::Unavailable, "unavailable", 503),
            (Code::DataLoss, "data_loss", 500),
            (Code::Unauthenticated, "unauthenticated", 401),
        ];
        for (code, want_name, want_status) in table {
            assert_eq!(name(code), want_name);
            assert_eq!(http_status(code).as_u16(), want_status, "{want_name}");
        }
        assert_eq!(
            error_json(Code::InvalidArgument, "num_bytes is 0").to_string(),
            r#"{"code":"invalid_argument","message":"num_bytes is 0"}"#
        );
    }
}
