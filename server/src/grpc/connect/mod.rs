//! The Connect protocol (connectrpc.com/docs/protocol) for EntropyService and ReceiptLogService
//! on the public listener: JSON or binary over plain HTTP POST, for curl, `buf curl` and Connect
//! clients. Off unless `connect_enabled`.
//!
//! Connect is a translation in front of the very service native gRPC calls ([`ConnectService`]
//! wraps the EntropyService stack: one message a call, the method tag, the API-key interceptor,
//! the service), so keys, scopes, quotas, the fair pool and delivery accounting are the same
//! code, and so are the error messages. A request is told apart by its content type:
//!
//! | content type | shape | what the translation does |
//! |---|---|---|
//! | `application/json`, `application/proto` | unary | the body is the message |
//! | `application/connect+json`, `application/connect+proto` | server streaming | the body is one enveloped message |
//! | anything else (`application/grpc…`) | | passed to the inner service untouched |
//!
//! The request becomes a gRPC request ([`request`]): the message, read within
//! [`MAX_PUBLIC_REQUEST_BYTES`](crate::process::server::MAX_PUBLIC_REQUEST_BYTES) and parsed
//! (JSON through the proto3 JSON mapping, [`methods`]), framed with gRPC's prefix; the key
//! headers and metadata passed on; `connect-timeout-ms` as `grpc-timeout`. The gRPC response
//! becomes the Connect response ([`response`]), errors mapped by [`codes`].
//!
//! Choices the protocol leaves to a server, and what this one does:
//! - `connect-protocol-version` may be left out (plain curl works); when sent it must be `1`.
//! - No compression: a compressed request is refused (`unimplemented`), responses never are.
//! - GET (Connect's cacheable unary calls, with the message in the URL) is refused: every
//!   method draws entropy or reads live counters, nothing to cache; POST it instead.
//! - No CORS: a browser's `Origin` is not passed on, so no page can read an answer; browsers
//!   use gRPC-Web.

mod codes;
mod envelope;
mod methods;
mod request;
mod response;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::header::{ALLOW, CONTENT_TYPE};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::Full;
use prost::bytes::Bytes;
use tonic::body::Body;
use tonic::server::NamedService;
use tower::Service;

/// The Connect protocol, on or off.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Connect {
    enabled: bool,
}

impl Connect {
    /// Connect as `connect_enabled` says.
    pub(crate) fn new(enabled: bool) -> Self {
        if enabled {
            tracing::info!(
                "Connect enabled for EntropyService and ReceiptLogService on the public listener"
            );
        }
        Self { enabled }
    }

    /// `service` speaking Connect as well as what it speaks; when off, answering Connect's
    /// content types with 415 and a message saying so (tonic would read a JSON body as a
    /// malformed gRPC frame).
    pub(crate) fn wrap<S>(self, service: S) -> ConnectService<S> {
        ConnectService { inner: service, enabled: self.enabled }
    }
}

/// How a Connect message is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    Json,
    Proto,
}

impl Codec {
    fn unary_content_type(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Self::Json => "application/json",
            Self::Proto => "application/proto",
        })
    }

    fn stream_content_type(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Self::Json => "application/connect+json",
            Self::Proto => "application/connect+proto",
        })
    }
}

/// Unary or server streaming.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Unary,
    Stream,
}

/// A Connect request's protocol, from its content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Protocol {
    shape: Shape,
    codec: Codec,
}

/// What a request to EntropyService's paths is.
#[derive(Debug, PartialEq, Eq)]
enum Incoming {
    /// A Connect call.
    Connect(Protocol),
    /// A GET: Connect's form of unary call this gateway does not serve.
    Get,
    /// Anything else (gRPC, gRPC-Web): for the inner service.
    Other,
}

impl Incoming {
    fn of<B>(request: &Request<B>) -> Self {
        if request.method() == http::Method::GET {
            return Self::Get;
        }
        let Some(content_type) = request.headers().get(CONTENT_TYPE) else { return Self::Other };
        let Ok(content_type) = content_type.to_str() else { return Self::Other };
        // Parameters (`; charset=utf-8`) do not change the protocol.
        let essence = content_type.split(';').next().unwrap_or_default().trim();
        let (shape, codec) = match essence.to_ascii_lowercase().as_str() {
            "application/json" => (Shape::Unary, Codec::Json),
            "application/proto" => (Shape::Unary, Codec::Proto),
            "application/connect+json" => (Shape::Stream, Codec::Json),
            "application/connect+proto" => (Shape::Stream, Codec::Proto),
            _ => return Self::Other,
        };
        Self::Connect(Protocol { shape, codec })
    }
}

/// A service answering Connect calls through `inner` (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct ConnectService<S> {
    inner: S,
    enabled: bool,
}

impl<S: NamedService> NamedService for ConnectService<S> {
    const NAME: &'static str = S::NAME;
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

impl<S, B> Service<Request<Body>> for ConnectService<S>
where
    S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<tonic::codegen::StdError>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> BoxFuture {
        let protocol = match Incoming::of(&request) {
            Incoming::Connect(_) if !self.enabled => {
                return Box::pin(std::future::ready(Ok(off())));
            }
            Incoming::Other | Incoming::Get if !self.enabled => {
                let call = self.inner.call(request);
                return Box::pin(async move { Ok(call.await?.map(Body::new)) });
            }
            Incoming::Other => {
                let call = self.inner.call(request);
                return Box::pin(async move { Ok(call.await?.map(Body::new)) });
            }
            Incoming::Get => return Box::pin(std::future::ready(Ok(get_refused()))),
            Incoming::Connect(protocol) => protocol,
        };
        // The clone that was made ready serves this call; the fresh one waits for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let (grpc, method) = match request::to_grpc(protocol, request).await {
                Ok(translated) => translated,
                Err(status) => return Ok(response::refusal(protocol, &status)),
            };
            let answer = inner.call(grpc).await?.map(Body::new);
            Ok(response::from_grpc(protocol, method, answer).await)
        })
    }
}

/// The answer to a GET: 405, saying what to send instead.
fn get_refused() -> Response<Body> {
    let mut response = plain_error(
        StatusCode::METHOD_NOT_ALLOWED,
        "GET is not served here (nothing this service answers can be cached): POST the request \
         with Content-Type application/json, and the key in a header, never in the URL",
    );
    response.headers_mut().insert(ALLOW, HeaderValue::from_static("POST"));
    response
}

/// The answer to a Connect request while Connect is off: 415.
fn off() -> Response<Body> {
    plain_error(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "the Connect protocol is off on this gateway (connect_enabled = false): call it over \
         gRPC, or ask its operator to turn Connect on",
    )
}

/// An answer made here, before any call: `status` and Connect's error JSON (`unimplemented`).
fn plain_error(status: StatusCode, message: &str) -> Response<Body> {
    let error = codes::error_json(tonic::Code::Unimplemented, message);
    let mut response = Response::new(Body::new(Full::new(Bytes::from(error.to_string()))));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incoming(method: &str, content_type: Option<&str>) -> Incoming {
        let mut request =
            Request::builder().method(method).uri("/entropy.v1.EntropyService/GetStatus");
        if let Some(content_type) = content_type {
            request = request.header(CONTENT_TYPE, content_type);
        }
        Incoming::of(&request.body(()).expect("request"))
    }

    #[test]
    fn the_content_type_names_the_protocol() {
        let connect = |shape, codec| Incoming::Connect(Protocol { shape, codec });
        assert_eq!(incoming("POST", Some("application/json")), connect(Shape::Unary, Codec::Json));
        assert_eq!(
            incoming("POST", Some("Application/JSON; charset=utf-8")),
            connect(Shape::Unary, Codec::Json)
        );
        assert_eq!(
            incoming("POST", Some("application/proto")),
            connect(Shape::Unary, Codec::Proto)
        );
        assert_eq!(
            incoming("POST", Some("application/connect+json")),
            connect(Shape::Stream, Codec::Json)
        );
        assert_eq!(
            incoming("POST", Some("application/connect+proto")),
            connect(Shape::Stream, Codec::Proto)
        );
        for other in ["application/grpc", "application/grpc+proto", "application/grpc-web+proto"] {
            assert_eq!(incoming("POST", Some(other)), Incoming::Other, "{other}");
        }
        assert_eq!(incoming("POST", None), Incoming::Other);
        assert_eq!(incoming("GET", None), Incoming::Get);
    }
}
