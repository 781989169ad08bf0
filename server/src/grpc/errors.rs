//! Domain errors to gRPC statuses: the one place that picks codes and wording.
//!
//! Messages say what the caller can act on (which field, which bound); internal details never
//! go out.

use tonic::Status;

use crate::domain::ingest::IngestError;
use crate::domain::ingest::replay::ReplayError;
use crate::domain::ingest::verify::VerifyError;
use crate::domain::pool::TakeError;
use crate::domain::quota::QuotaError;

use super::deadline::Limit;
use super::delivery::Full;

impl From<IngestError> for Status {
    fn from(e: IngestError) -> Self {
        let msg = e.to_string();
        match e {
            IngestError::Invalid(VerifyError::Malformed { .. } | VerifyError::CrcMismatch) => {
                Status::invalid_argument(msg)
            }
            IngestError::Invalid(VerifyError::UnknownKey | VerifyError::BadMac) => {
                Status::unauthenticated(msg)
            }
            IngestError::Invalid(
                VerifyError::SignedBeforeStart { .. }
                | VerifyError::Stale { .. }
                | VerifyError::Future { .. },
            ) => Status::failed_precondition(msg),
            IngestError::Invalid(VerifyError::WrongGateway { .. }) => {
                Status::permission_denied(msg)
            }
            IngestError::Replay(ReplayError::Duplicate { .. }) => Status::already_exists(msg),
            IngestError::Replay(ReplayError::TooOld { .. }) => Status::failed_precondition(msg),
            IngestError::Replay(ReplayError::TableFull(_)) | IngestError::PoolFull(_) => {
                Status::resource_exhausted(msg)
            }
            // The I/O error stays in the gateway's log. Not stored; the collector resends the
            // same sealed bytes (an UNAVAILABLE is an unknown outcome to it), which is safe.
            IngestError::Unrecorded(_) => Status::unavailable(
                "the gateway cannot record its ingest lease on disk; nothing was stored, send \
                 the same chunk again later",
            ),
        }
    }
}

impl From<Full> for Status {
    /// RESOURCE_EXHAUSTED naming the allowance that had no room; nothing was drawn.
    fn from(full: Full) -> Self {
        Status::resource_exhausted(format!(
            "{full}; nothing consumed: read the responses already sent, or retry later"
        ))
    }
}

/// The status for a take that returned nothing, given which limit ended the wait.
pub(crate) fn take_failed(e: TakeError, limit: Limit, wanted: usize) -> Status {
    match (e, limit) {
        (TakeError::TimedOut, Limit::Client) => Status::deadline_exceeded(format!(
            "deadline reached before {wanted} bytes of entropy were available; nothing consumed"
        )),
        (TakeError::TimedOut, Limit::Server) => Status::unavailable(format!(
            "not enough entropy for {wanted} bytes within the server's maximum wait; nothing \
             consumed, retry later"
        )),
        (TakeError::Closed, _) => Status::unavailable("server is shutting down"),
        (TakeError::TooLarge { requested, capacity }, _) => Status::invalid_argument(format!(
            "request needs {requested} bytes, more than the pool holds ({capacity})"
        )),
        (e @ TakeError::NoAcceptedClass { .. }, _) => {
            Status::failed_precondition(format!("{e}; nothing consumed"))
        }
    }
}

/// INVALID_ARGUMENT naming a field and its bound.
pub(crate) fn out_of_range(field: &str, value: impl std::fmt::Display, bound: &str) -> Status {
    Status::invalid_argument(format!("{field} is {value}, must be {bound}"))
}

/// RESOURCE_EXHAUSTED for a quota, with the wait in a `retry-after-ms` trailer when waiting
/// helps.
pub(crate) fn quota_exceeded(e: QuotaError) -> Status {
    if let QuotaError::Burst { .. } = e {
        // Never admissible for this key: not a quota to wait out.
        return Status::failed_precondition(e.to_string());
    }
    let mut status = Status::resource_exhausted(e.to_string());
    if let Some(wait) = e.retry_after() {
        let ms = wait.as_millis().max(1).to_string();
        if let Ok(value) = ms.parse() {
            status.metadata_mut().insert("retry-after-ms", value);
        }
    }
    status
}

/// UNAVAILABLE for a call or stream the shutdown ended.
pub(crate) fn shutting_down() -> Status {
    Status::unavailable("server is shutting down")
}

/// DEADLINE_EXCEEDED for a stream whose client deadline passed.
pub(crate) fn stream_deadline() -> Status {
    Status::deadline_exceeded("stream deadline reached")
}

/// UNAVAILABLE for a stream whose next message (at least `n` bytes) got no entropy within
/// `stream_max_wait_ms`; other take failures as for a call.
pub(crate) fn stream_take_failed(e: TakeError, n: usize, max_wait: std::time::Duration) -> Status {
    match e {
        TakeError::TimedOut => Status::unavailable(format!(
            "no entropy reached this stream for {} ms (stream_max_wait_ms; its next message \
             needs at least {n} bytes); nothing consumed, reopen the stream later",
            max_wait.as_millis()
        )),
        other => take_failed(other, Limit::Server, n),
    }
}

/// INVALID_ARGUMENT for a request that breaks a rule between its fields (or of one field that
/// [`out_of_range`] does not fit): `message` names the fields.
pub(crate) fn invalid_request(message: impl Into<String>) -> Status {
    Status::invalid_argument(message)
}

/// UNAUTHENTICATED: no key, or one that matches none (`message` says which, never the key).
pub(crate) fn unauthenticated(message: impl Into<String>) -> Status {
    Status::unauthenticated(message)
}

/// PERMISSION_DENIED for a key without the method's scope.
pub(crate) fn missing_scope(key: &str, scope: &str) -> Status {
    Status::permission_denied(format!("key {key:?} lacks the {scope} scope"))
}

/// The status for a CheckQuality that could not start before its deadline because another was
/// running (the gateway runs one at a time); nothing was drawn.
pub(crate) fn quality_busy(limit: Limit) -> Status {
    let why = "another quality check was running (the gateway runs one at a time) until the";
    match limit {
        Limit::Client => Status::deadline_exceeded(format!("{why} deadline; nothing drawn")),
        Limit::Server => Status::unavailable(format!(
            "{why} server's maximum wait (max_wait_ms); nothing drawn, retry later"
        )),
    }
}

/// INTERNAL for a failure of the gateway itself while serving `what`. The detail goes to the
/// gateway's log, never to the caller.
pub(crate) fn internal(what: &'static str, detail: &dyn std::fmt::Display) -> Status {
    tracing::error!(what, "internal error: {detail}");
    Status::internal(format!("{what} failed inside the gateway; see its log"))
}
