//! A Connect request as the gRPC request the inner service takes: its headers checked, its body
//! read within the public request bound and decoded, then framed as one gRPC message.
//!
//! What goes on: the metadata headers (the API key among them: `authorization: Bearer` or
//! `x-api-key`, never a URL), `connect-timeout-ms` as `grpc-timeout`, the extensions the
//! transport put on the request (the connection and the call's slot). What does not: Connect's
//! and HTTP's own headers, any `grpc-*` header the client sent, and `Origin` (a browser's call
//! is not admitted through Connect: there is no CORS here; browsers use gRPC-Web).

use http::header::{CONTENT_TYPE, TE};
use http::{HeaderMap, HeaderValue, Method as HttpMethod, Version};
use http_body_util::{BodyExt as _, Full, Limited};
use prost::bytes::Bytes;
use tonic::Status;
use tonic::body::Body;

use super::envelope::{self, COMPRESSED, OneError};
use super::methods::{self, Method};
use super::{Codec, Protocol, Shape};
use crate::process::server::MAX_PUBLIC_REQUEST_BYTES;

/// Most digits of `connect-timeout-ms` (the protocol's bound).
const MAX_TIMEOUT_DIGITS: usize = 10;
/// Largest value `grpc-timeout` carries in one unit (8 digits).
const MAX_GRPC_TIMEOUT_VALUE: u64 = 99_999_999;

/// The gRPC request for a Connect request, and the method it calls; a status refuses it.
pub(super) async fn to_grpc(
    protocol: Protocol,
    request: http::Request<Body>,
) -> Result<(http::Request<Body>, &'static Method), Status> {
    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path();
    let method = methods::find(path).ok_or_else(|| {
        let service = methods::service_of(path);
        let name = path.rsplit('/').next().unwrap_or(path);
        Status::unimplemented(format!("{service} has no method {name:?}"))
    })?;
    check_shape(protocol, method)?;
    check_headers(protocol, &parts.headers)?;
    let timeout = grpc_timeout(&parts.headers)?;
    let message = read_message(protocol, method, body).await?;

    let mut headers = HeaderMap::new();
    for (name, value) in &parts.headers {
        if passes(name.as_str()) {
            headers.append(name.clone(), value.clone());
        }
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(TE, HeaderValue::from_static("trailers"));
    if let Some(timeout) = timeout {
        headers.insert("grpc-timeout", timeout);
    }
    parts.headers = headers;
    parts.method = HttpMethod::POST;
    // What the inner stack expects of gRPC (tonic-web, in front of it when gRPC-Web is on, lets
    // only HTTP/2 requests through unchanged).
    parts.version = Version::HTTP_2;
    let framed = envelope::envelope(0, &message);
    Ok((http::Request::from_parts(parts, Body::new(Full::new(Bytes::from(framed)))), method))
}

/// A unary method takes a unary request, a streaming one a streaming request.
fn check_shape(protocol: Protocol, method: &Method) -> Result<(), Status> {
    match (protocol.shape, method.streaming) {
        (Shape::Unary, false) | (Shape::Stream, true) => Ok(()),
        (Shape::Unary, true) => Err(Status::unimplemented(format!(
            "{} is a server-streaming method: send Content-Type application/connect+json or \
             application/connect+proto, with the request in an envelope",
            method.name
        ))),
        (Shape::Stream, false) => Err(Status::unimplemented(format!(
            "{} is a unary method: send Content-Type application/json or application/proto",
            method.name
        ))),
    }
}

/// The protocol version, when sent, is 1; the body is not compressed.
fn check_headers(protocol: Protocol, headers: &HeaderMap) -> Result<(), Status> {
    if let Some(version) = headers.get("connect-protocol-version")
        && version.as_bytes() != b"1"
    {
        return Err(Status::invalid_argument(
            "connect-protocol-version must be 1 (or left out): the only version of the Connect \
             protocol",
        ));
    }
    let encoding = match protocol.shape {
        Shape::Unary => "content-encoding",
        Shape::Stream => "connect-content-encoding",
    };
    if let Some(value) = headers.get(encoding)
        && !value.as_bytes().eq_ignore_ascii_case(b"identity")
    {
        return Err(Status::unimplemented(format!(
            "{encoding} {:?} is not supported: send the request uncompressed",
            String::from_utf8_lossy(value.as_bytes())
        )));
    }
    Ok(())
}

/// `connect-timeout-ms` as a `grpc-timeout` value.
fn grpc_timeout(headers: &HeaderMap) -> Result<Option<HeaderValue>, Status> {
    let Some(value) = headers.get("connect-timeout-ms") else { return Ok(None) };
    let bad = || {
        Status::invalid_argument(format!(
            "connect-timeout-ms is {:?}, must be a whole number of milliseconds of 1 to \
             {MAX_TIMEOUT_DIGITS} digits",
            String::from_utf8_lossy(value.as_bytes())
        ))
    };
    let digits = value.as_bytes();
    if digits.is_empty()
        || digits.len() > MAX_TIMEOUT_DIGITS
        || !digits.iter().all(u8::is_ascii_digit)
    {
        return Err(bad());
    }
    let ms: u64 = std::str::from_utf8(digits).map_err(|_| bad())?.parse().map_err(|_| bad())?;
    let timeout = if ms <= MAX_GRPC_TIMEOUT_VALUE {
        format!("{ms}m")
    } else {
        format!("{}S", ms.div_ceil(1000))
    };
    HeaderValue::try_from(timeout).map(Some).map_err(|_| bad())
}

/// Whether a request header goes on to the gRPC service (see the module docs).
fn passes(name: &str) -> bool {
    !(name.starts_with("connect-")
        || name.starts_with("grpc-")
        || matches!(
            name,
            "content-type"
                | "content-length"
                | "content-encoding"
                | "accept-encoding"
                | "transfer-encoding"
                | "connection"
                | "te"
                | "origin"
        ))
}

/// The request message as protobuf, read within the bound every public request has.
async fn read_message(protocol: Protocol, method: &Method, body: Body) -> Result<Vec<u8>, Status> {
    let limit = match protocol.shape {
        Shape::Unary => MAX_PUBLIC_REQUEST_BYTES,
        Shape::Stream => MAX_PUBLIC_REQUEST_BYTES + envelope::PREFIX,
    };
    let body = match Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return Err(match e.downcast::<Status>() {
                Ok(status) => *status,
                Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                    Status::out_of_range(format!(
                        "the request body is longer than {limit} bytes, the most an \
                         EntropyService request may be"
                    ))
                }
                Err(e) => Status::cancelled(format!("the request body was not read whole: {e}")),
            });
        }
    };
    let message = match protocol.shape {
        Shape::Unary => body,
        Shape::Stream => match envelope::one(body) {
            Ok((0, message)) => message,
            Ok((flags, _)) if flags & COMPRESSED != 0 => {
                return Err(Status::unimplemented(
                    "the request message is compressed (envelope flag 0x01): send it \
                     uncompressed",
                ));
            }
            Ok((flags, _)) => {
                return Err(Status::invalid_argument(format!(
                    "the request envelope's flags are {flags:#04x}, must be 0"
                )));
            }
            Err(why) => {
                let what = match why {
                    OneError::Truncated => "ended inside it",
                    OneError::Trailing => "went on after it",
                };
                return Err(Status::invalid_argument(format!(
                    "a streaming request's body is one envelope (a flag byte 0, a 4-byte \
                     big-endian length, the message); this body {what}"
                )));
            }
        },
    };
    match protocol.codec {
        Codec::Proto => Ok(message.to_vec()),
        Codec::Json => (method.request_from_json)(&message).map_err(|e| {
            Status::invalid_argument(format!(
                "the request is not a valid entropy.v1.{} in JSON: {e}",
                method.request_type()
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeout(value: &str) -> Result<Option<HeaderValue>, Status> {
        let mut headers = HeaderMap::new();
        headers.insert("connect-timeout-ms", HeaderValue::from_str(value).expect("value"));
        grpc_timeout(&headers)
    }

    #[test]
    fn timeouts_become_grpc_timeouts_in_a_unit_that_fits() {
        assert_eq!(timeout("1500").expect("ok"), Some(HeaderValue::from_static("1500m")));
        assert_eq!(timeout("99999999").expect("ok"), Some(HeaderValue::from_static("99999999m")));
        assert_eq!(timeout("100000001").expect("ok"), Some(HeaderValue::from_static("100001S")));
        assert_eq!(timeout("9999999999").expect("ok"), Some(HeaderValue::from_static("10000000S")));
        assert_eq!(grpc_timeout(&HeaderMap::new()).expect("none"), None);
        for bad in ["", "-1", "1.5", "12345678901", "10s", "0x10"] {
            let err = timeout(bad).expect_err(bad);
            assert_eq!(err.code(), tonic::Code::InvalidArgument);
            assert!(err.message().contains("connect-timeout-ms"), "{err:?}");
        }
    }

    #[test]
    fn keys_and_metadata_pass_protocol_headers_do_not() {
        for name in ["authorization", "x-api-key", "user-agent", "x-request-id"] {
            assert!(passes(name), "{name}");
        }
        for name in [
            "content-type",
            "connect-protocol-version",
            "connect-timeout-ms",
            "grpc-timeout",
            "origin",
            "content-encoding",
        ] {
            assert!(!passes(name), "{name}");
        }
    }
}
