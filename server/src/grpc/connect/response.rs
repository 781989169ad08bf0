//! gRPC responses of the inner service as Connect responses.
//!
//! - **Unary**: the one gRPC message becomes the body (protobuf as it is, or written as JSON),
//!   with HTTP 200; an error becomes Connect's error JSON with the HTTP status of its code
//!   ([`super::codes`]). gRPC's response headers become headers, its trailers headers prefixed
//!   `trailer-` (a trailers-only error's metadata, such as `retry-after-ms`, stays a plain
//!   header).
//! - **Streaming**: HTTP 200 at once; each gRPC message becomes an envelope (binary messages
//!   pass through untouched: the framing is the same), and the trailers the end-of-stream
//!   message `{"error": {…}, "metadata": {…}}`, an error included (Connect streams report
//!   errors there, never in the HTTP status).
//!
//! The inner response's extensions travel on, [`Dues`] among them: the transport settles the
//! drawn bytes of a unary response when its whole body has left (any content type but
//! `application/connect+…` is one message), and those of a stream message when its envelope
//! has. A message drawn but never sent (a unary call whose body turned into an error, a stream
//! message that could not be written as JSON) is settled here as discarded.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt as _, Full};
use prost::bytes::Bytes;
use tonic::body::Body;
use tonic::{Code, Status};

use super::codes;
use super::envelope::{self, END_STREAM, Frames};
use super::methods::Method;
use super::{Codec, Protocol, Shape};
use crate::transport::Dues;

/// The Connect response to an inner gRPC `response`.
pub(super) async fn from_grpc(
    protocol: Protocol,
    method: &'static Method,
    response: http::Response<Body>,
) -> http::Response<Body> {
    match protocol.shape {
        Shape::Unary => unary(protocol.codec, method, response).await,
        Shape::Stream => stream(protocol.codec, method, response),
    }
}

/// The Connect response refusing a request before it reached the service.
pub(super) fn refusal(protocol: Protocol, status: &Status) -> http::Response<Body> {
    match protocol.shape {
        Shape::Unary => {
            unary_error(http::Response::new(()).into_parts().0, HeaderMap::new(), status)
        }
        Shape::Stream => {
            let (mut parts, ()) = http::Response::new(()).into_parts();
            parts.headers.insert(CONTENT_TYPE, protocol.codec.stream_content_type());
            let end = end_of_stream(status, &HeaderMap::new());
            http::Response::from_parts(parts, Body::new(Full::new(Bytes::from(end))))
        }
    }
}

async fn unary(
    codec: Codec,
    method: &'static Method,
    response: http::Response<Body>,
) -> http::Response<Body> {
    let (mut parts, body) = response.into_parts();
    let headers = metadata(&parts.headers);
    // A trailers-only response: the error is in the headers.
    if let Some(status) = Status::from_header_map(&parts.headers).filter(|s| s.code() != Code::Ok) {
        return failed(parts, headers, &status);
    }
    let collected = match body.collect().await {
        Ok(collected) => collected,
        Err(status) => return failed(parts, headers, &status),
    };
    let trailers = collected.trailers().cloned().unwrap_or_default();
    let status = Status::from_header_map(&trailers)
        .unwrap_or_else(|| Status::internal("the call ended without a status"));
    if status.code() != Code::Ok {
        let mut headers = headers;
        add_prefixed(&mut headers, &metadata(&trailers));
        return failed(parts, headers, &status);
    }
    let message = match envelope::one(collected.to_bytes()) {
        Ok((0, message)) => message,
        _ => return failed(parts, headers, &Status::internal("the reply was not one message")),
    };
    let body = match codec {
        Codec::Proto => message,
        Codec::Json => match (method.response_to_json)(&message) {
            Ok(json) => Bytes::from(json),
            Err(e) => {
                let status = crate::grpc::errors::internal("writing a reply as JSON", &e);
                return failed(parts, headers, &status);
            }
        },
    };
    parts.status = StatusCode::OK;
    parts.headers = headers;
    parts.headers.insert(CONTENT_TYPE, codec.unary_content_type());
    add_prefixed(&mut parts.headers, &metadata(&trailers));
    http::Response::from_parts(parts, Body::new(Full::new(body)))
}

/// A unary error: what the response drew is discarded (its message is not sent).
fn failed(
    mut parts: http::response::Parts,
    headers: HeaderMap,
    status: &Status,
) -> http::Response<Body> {
    if let Some(dues) = parts.extensions.remove::<Dues>() {
        for settle in dues.rest() {
            settle.discarded();
        }
    }
    unary_error(parts, headers, status)
}

/// Connect's unary error: the error JSON, the HTTP status of its code, `headers` (metadata).
fn unary_error(
    mut parts: http::response::Parts,
    headers: HeaderMap,
    status: &Status,
) -> http::Response<Body> {
    parts.status = codes::http_status(status.code());
    parts.headers = headers;
    add_status_metadata(&mut parts.headers, status);
    parts.headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let body = codes::error_json(status.code(), status.message()).to_string();
    http::Response::from_parts(parts, Body::new(Full::new(Bytes::from(body))))
}

fn stream(
    codec: Codec,
    method: &'static Method,
    response: http::Response<Body>,
) -> http::Response<Body> {
    let (mut parts, body) = response.into_parts();
    let dues = parts.extensions.get::<Dues>().cloned();
    let mut headers = metadata(&parts.headers);
    headers.insert(CONTENT_TYPE, codec.stream_content_type());
    // A trailers-only response: the status (and its metadata) goes in the end-of-stream
    // message, the only message of the stream.
    let trailers_only =
        Status::from_header_map(&parts.headers).map(|status| (status, metadata(&parts.headers)));
    parts.status = StatusCode::OK;
    parts.headers = headers;
    let body = match trailers_only {
        Some((status, metadata)) => {
            Body::new(Full::new(Bytes::from(end_of_stream(&status, &metadata))))
        }
        None => Body::new(StreamBody {
            inner: body,
            codec,
            method,
            frames: Frames::default(),
            dues,
            done: false,
        }),
    };
    http::Response::from_parts(parts, body)
}

/// A gRPC response body as a Connect streaming body.
struct StreamBody {
    inner: Body,
    codec: Codec,
    method: &'static Method,
    /// The gRPC messages of a JSON stream, as they arrive.
    frames: Frames,
    /// What the stream's messages drew, to discard one that cannot be sent.
    dues: Option<Dues>,
    done: bool,
}

impl StreamBody {
    /// Ends the stream with `status` and `trailers` (metadata).
    fn end(&mut self, status: &Status, trailers: &HeaderMap) -> Frame<Bytes> {
        self.done = true;
        Frame::data(Bytes::from(end_of_stream(status, trailers)))
    }

    /// The envelopes of the whole JSON messages received so far; an error ends the stream.
    fn json_envelopes(&mut self) -> Result<Vec<u8>, Status> {
        let mut out = Vec::new();
        while let Some((_, message)) = self.frames.next() {
            match (self.method.response_to_json)(&message) {
                Ok(json) => envelope::push(&mut out, 0, &json),
                Err(e) => {
                    // Drawn, never sent; the messages before it already took their own.
                    if let Some(settle) = self.dues.as_ref().and_then(Dues::next) {
                        settle.discarded();
                    }
                    return Err(crate::grpc::errors::internal(
                        "writing a stream message as JSON",
                        &e,
                    ));
                }
            }
        }
        Ok(out)
    }
}

impl http_body::Body for StreamBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(status)) => {
                    return Poll::Ready(Some(Ok(this.end(&status, &HeaderMap::new()))));
                }
                None => {
                    let status = Status::internal("the stream ended without a status");
                    return Poll::Ready(Some(Ok(this.end(&status, &HeaderMap::new()))));
                }
            };
            let data = match frame.into_data() {
                Ok(data) => data,
                Err(frame) => {
                    let Ok(trailers) = frame.into_trailers() else { continue };
                    let status = Status::from_header_map(&trailers)
                        .unwrap_or_else(|| Status::internal("the stream ended without a status"));
                    return Poll::Ready(Some(Ok(this.end(&status, &metadata(&trailers)))));
                }
            };
            match this.codec {
                // gRPC's message frames are Connect's message envelopes.
                Codec::Proto => return Poll::Ready(Some(Ok(Frame::data(data)))),
                Codec::Json => {
                    this.frames.feed(&data);
                    match this.json_envelopes() {
                        Ok(out) if out.is_empty() => continue,
                        Ok(out) => return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out))))),
                        Err(status) => {
                            return Poll::Ready(Some(Ok(this.end(&status, &HeaderMap::new()))));
                        }
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// The end-of-stream message: `{}` for success, else `{"error": {…}}`, with `"metadata"` when
/// there is any (each name's values as a list of strings).
fn end_of_stream(status: &Status, trailers: &HeaderMap) -> Vec<u8> {
    let mut end = serde_json::Map::new();
    if status.code() != Code::Ok {
        end.insert("error".into(), codes::error_json(status.code(), status.message()));
    }
    let mut all = trailers.clone();
    add_status_metadata(&mut all, status);
    let mut metadata = serde_json::Map::new();
    for name in all.keys() {
        let values: Vec<serde_json::Value> = all
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned().into())
            .collect();
        metadata.insert(name.as_str().to_owned(), values.into());
    }
    if !metadata.is_empty() {
        end.insert("metadata".into(), metadata.into());
    }
    envelope::envelope(END_STREAM, serde_json::Value::Object(end).to_string().as_bytes())
}

/// The metadata among gRPC `headers` (or trailers): all but gRPC's own and the framing's.
fn metadata(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in headers {
        let n = name.as_str();
        let own = n.starts_with("grpc-")
            || matches!(n, "content-type" | "content-length" | "te" | "trailer" | "date");
        if !own {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// A status's own metadata (such as `retry-after-ms`), for a status made in process whose
/// metadata is not already among the headers.
fn add_status_metadata(headers: &mut HeaderMap, status: &Status) {
    for (name, value) in &metadata(&status.metadata().clone().into_headers()) {
        if !headers.contains_key(name) {
            headers.append(name.clone(), value.clone());
        }
    }
}

/// `trailers` as unary Connect sends them: headers named `trailer-<name>`.
fn add_prefixed(headers: &mut HeaderMap, trailers: &HeaderMap) {
    for (name, value) in trailers {
        if let Ok(prefixed) = HeaderName::try_from(format!("trailer-{name}")) {
            headers.append(prefixed, value.clone());
        }
    }
}
