//! Errors, one variant per way a call can fail, from the gRPC status the gateway returns.

use tonic::Code;

/// What went wrong with a call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request field was out of range; the message names the field and its bounds.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The API key is missing or unknown.
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    /// The key lacks the scope this call needs.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// The key's quota is used up; retry later.
    #[error("quota exhausted: {0}")]
    QuotaExhausted(String),
    /// Not enough entropy within the server's wait, the server is shutting down, or it cannot
    /// be reached. Nothing was consumed: retry.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// Your deadline passed first. Nothing was consumed.
    #[error("deadline exceeded: {0}")]
    DeadlineExceeded(String),
    /// The call accepts only some source kinds (`accept_kinds`) and the gateway is fed none
    /// of them; the message names what its pool holds. Nothing was consumed. Retrying does not
    /// help until a source of an accepted kind feeds the gateway.
    #[error("failed precondition: {0}")]
    FailedPrecondition(String),
    /// The endpoint, key or TLS settings are unusable.
    #[error("configuration: {0}")]
    Config(String),
    /// Any other status.
    #[error("{code:?}: {message}")]
    Other {
        /// The gRPC code.
        code: Code,
        /// The server's message.
        message: String,
    },
}

impl Error {
    /// True when retrying the same call later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::QuotaExhausted(_) | Self::DeadlineExceeded(_))
    }
}

impl From<tonic::Status> for Error {
    fn from(s: tonic::Status) -> Self {
        let message = s.message().to_owned();
        match s.code() {
            Code::InvalidArgument | Code::OutOfRange => Self::InvalidArgument(message),
            Code::Unauthenticated => Self::Unauthenticated(message),
            Code::PermissionDenied => Self::PermissionDenied(message),
            Code::ResourceExhausted => Self::QuotaExhausted(message),
            Code::Unavailable => Self::Unavailable(message),
            Code::DeadlineExceeded => Self::DeadlineExceeded(message),
            Code::FailedPrecondition => Self::FailedPrecondition(message),
            code => Self::Other { code, message },
        }
    }
}

/// `status` naming `target` and the cause when it is a failure of the transport here (it cannot
/// connect, the connection broke): those carry their cause as a source, and say nothing of
/// where ("tcp connect error"). A status the gateway sent is returned as it is.
pub(crate) fn locate(status: tonic::Status, target: &str) -> tonic::Status {
    let Some(source) = std::error::Error::source(&status) else {
        return status;
    };
    let mut message = format!("{target}: {}", status.message());
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(source);
    while let Some(error) = cause {
        let text = error.to_string();
        if !message.contains(&text) {
            message = format!("{message}: {text}");
        }
        cause = error.source();
    }
    tonic::Status::new(status.code(), message)
}

impl From<tonic::transport::Error> for Error {
    fn from(e: tonic::transport::Error) -> Self {
        Self::Unavailable(e.to_string())
    }
}
