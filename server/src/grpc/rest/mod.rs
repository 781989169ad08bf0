//! The original QRNG-DD gateway's REST routes on the public listener, for its clients to switch
//! without changing their code. Off unless `rest_enabled`.
//!
//! `GET /api/random?bytes=N&encoding=hex|base64|binary`, `/api/integers?count=N&min=A&max=B`,
//! `/api/floats?count=N`, `/api/uuid?count=N`, `/api/status`, `/api/test/monte-carlo?iterations=N`
//! (CheckQuality, scope `quality:check`) and `/health` answer in the original's shapes (text, raw bytes or JSON; see [`render`]). Each `/api/*` request becomes
//! one call on the very EntropyService stack gRPC clients reach (one-message check, method tag,
//! API-key interceptor, service): a prost request framed as gRPC, the caller's `Authorization`
//! or `X-API-Key` header passed on as metadata, the connection's extensions carried along. So
//! the same keys (checked in constant time by the interceptor, never here), scopes, quotas, fair
//! pool, deadlines and bounds apply, and the drawn bytes count as served only when the last byte
//! of the REST answer has left: the call's [`Dues`] travel on the REST response, whose content
//! type is not gRPC, so the transport settles it as one message at its end.
//!
//! A key in the URL is refused before any call ([`params`]): nothing is drawn or compared.
//! `/health` needs no key (as the gRPC health service), and says whether the gateway is ready.

pub(crate) mod params;
pub(crate) mod render;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use entropy_proto::v1::{
    CheckQualityRequest, CheckQualityResponse, GetFloatsRequest, GetFloatsResponse,
    GetIntegersRequest, GetIntegersResponse, GetRandomRequest, GetRandomResponse, GetStatusRequest,
    GetStatusResponse, GetUuidsRequest, GetUuidsResponse,
};
use http::header::{ALLOW, AUTHORIZATION, CONTENT_TYPE, TE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use prost::Message;
use prost::bytes::{Buf as _, Bytes};
use serde_json::json;
use tonic::body::Body;
use tonic::service::Routes;
use tower::{Service, ServiceExt as _};

use self::params::{Ask, BadRequest, Encoding};
use crate::domain::readiness::Readiness;
use crate::transport::Dues;

/// The gRPC path prefix of EntropyService's methods.
const SERVICE_PATH: &str = "/entropy.v1.EntropyService/";
/// The longest request body a REST request may carry: none (every route is a GET).
const MAX_BODY_BYTES: usize = 0;

/// The REST routes in front of `inner`, the EntropyService stack.
#[derive(Debug, Clone)]
pub(crate) struct Rest<S> {
    inner: S,
    readiness: Arc<Readiness>,
}

impl<S> Rest<S> {
    /// REST over `inner`; `/health` reports `readiness`.
    pub(crate) fn new(inner: S, readiness: Arc<Readiness>) -> Self {
        Self { inner, readiness }
    }
}

/// `routes` with the REST routes (`/api/*`, `/health`) added in front of `rest`.
pub(crate) fn install<S, RB>(routes: Routes, rest: Rest<S>) -> Routes
where
    S: Service<Request<Body>, Response = Response<RB>, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    RB: http_body::Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<tonic::Status>,
{
    tracing::info!("REST routes of the original QRNG-DD gateway enabled on the public listener");
    Routes::from(
        routes
            .into_axum_router()
            .route_service("/api/{*route}", rest.clone())
            .route_service("/health", rest),
    )
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

impl<S, B, RB> Service<Request<B>> for Rest<S>
where
    S: Service<Request<Body>, Response = Response<RB>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    RB: http_body::Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<tonic::Status>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The inner service is made ready in the call's own future.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> BoxFuture {
        let (inner, readiness) = (self.inner.clone(), self.readiness.clone());
        Box::pin(async move { Ok(serve(inner, &readiness, request).await) })
    }
}

/// Answers one REST request.
async fn serve<S, B, RB>(inner: S, readiness: &Readiness, request: Request<B>) -> Response<Body>
where
    S: Service<Request<Body>, Response = Response<RB>, Error = Infallible>,
    RB: http_body::Body<Data = Bytes>,
    RB::Error: Into<tonic::Status>,
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = request.into_parts();
    let ask = match params::read(parts.uri.path(), parts.uri.query()) {
        Ok(ask) => ask,
        Err(bad) => return render::refused(&bad),
    };
    if parts.method != Method::GET {
        let mut response = render::refused(&BadRequest {
            status: StatusCode::METHOD_NOT_ALLOWED,
            message: format!("{} takes GET only, not {}", parts.uri.path(), parts.method),
            field: None,
        });
        response.headers_mut().insert(ALLOW, HeaderValue::from_static("GET"));
        if parts.method == Method::HEAD {
            // An answer to HEAD has no body.
            *response.body_mut() = Body::empty();
        }
        return response;
    }
    // The request has arrived once its body has ended (the transport starts the call then).
    if http_body_util::Limited::new(body, MAX_BODY_BYTES).collect().await.is_err() {
        return render::refused(&BadRequest {
            status: StatusCode::BAD_REQUEST,
            message: "a GET request carries no body".into(),
            field: None,
        });
    }
    let call = Call { inner, parts };
    match ask {
        Ask::Health => health(readiness),
        Ask::Random { bytes, encoding } => {
            let wire = match encoding {
                Encoding::Hex => entropy_proto::v1::Encoding::Hex,
                Encoding::Base64 => entropy_proto::v1::Encoding::Base64,
                Encoding::Binary => entropy_proto::v1::Encoding::Unspecified,
            };
            let request =
                GetRandomRequest { num_bytes: bytes, encoding: wire as i32, ..Default::default() };
            call.make("GetRandom", &request, |r: GetRandomResponse| match encoding {
                Encoding::Binary => (render::BINARY, r.data),
                Encoding::Hex | Encoding::Base64 => (render::TEXT, r.text.into_bytes()),
            })
            .await
        }
        Ask::Integers { count, min, max } => {
            let request = GetIntegersRequest { min, max, count, ..Default::default() };
            call.make("GetIntegers", &request, |r: GetIntegersResponse| {
                (render::JSON, json!(r.values).to_string().into_bytes())
            })
            .await
        }
        Ask::Floats { count } => {
            let request = GetFloatsRequest { count, ..Default::default() };
            call.make("GetFloats", &request, |r: GetFloatsResponse| {
                (render::JSON, json!(r.values).to_string().into_bytes())
            })
            .await
        }
        Ask::Uuids { count } => {
            let request = GetUuidsRequest { count, ..Default::default() };
            // The original answers one UUID as bare text, more as a JSON array.
            call.make("GetUuids", &request, move |r: GetUuidsResponse| match r.uuids.as_slice() {
                [one] if count == 1 => (render::TEXT, one.clone().into_bytes()),
                many => (render::JSON, json!(many).to_string().into_bytes()),
            })
            .await
        }
        Ask::MonteCarlo { iterations } => {
            let sample_bytes = iterations * params::BYTES_PER_POINT;
            let request = CheckQualityRequest { sample_bytes, ..Default::default() };
            call.make("CheckQuality", &request, |r: CheckQualityResponse| {
                (render::JSON, render::monte_carlo(&r).to_string().into_bytes())
            })
            .await
        }
        Ask::Status => {
            call.make("GetStatus", &GetStatusRequest {}, |r: GetStatusResponse| {
                let now = entropy_ops::clock::unix_ms_now();
                (render::JSON, render::status(&r, now).to_string().into_bytes())
            })
            .await
        }
    }
}

/// `/health`: 200 when the gateway is ready, else 503 with the reason.
fn health(readiness: &Readiness) -> Response<Body> {
    match readiness.check() {
        Ok(()) => render::json(StatusCode::OK, &json!({ "status": "healthy" })),
        Err(why) => render::json(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({ "status": "unhealthy", "reason": why.to_string() }),
        ),
    }
}

/// One call on the EntropyService stack for a REST request.
struct Call<S> {
    inner: S,
    /// The REST request's head: its key headers and the connection's extensions.
    parts: http::request::Parts,
}

impl<S, RB> Call<S>
where
    S: Service<Request<Body>, Response = Response<RB>, Error = Infallible>,
    RB: http_body::Body<Data = Bytes>,
    RB::Error: Into<tonic::Status>,
{
    /// Calls `method` with `message` and renders its answer with `render`, or its status as a
    /// JSON error. The answer carries the call's dues, settled when its last byte leaves.
    async fn make<M: Message, R: Message + Default>(
        self,
        method: &str,
        message: &M,
        render: impl FnOnce(R) -> (&'static str, Vec<u8>),
    ) -> Response<Body> {
        let Self { inner, parts } = self;
        let encoded = message.encode_to_vec();
        let mut frame = Vec::with_capacity(5 + encoded.len());
        frame.push(0);
        frame.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
        frame.extend_from_slice(&encoded);
        let mut request = Request::new(Body::new(http_body_util::Full::new(Bytes::from(frame))));
        *request.method_mut() = Method::POST;
        *request.version_mut() = http::Version::HTTP_2;
        match format!("{SERVICE_PATH}{method}").parse() {
            Ok(uri) => *request.uri_mut() = uri,
            Err(e) => return render::failed(&crate::grpc::errors::internal("REST routing", &e)),
        }
        let headers = request.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        headers.insert(TE, HeaderValue::from_static("trailers"));
        for name in [AUTHORIZATION, http::HeaderName::from_static("x-api-key")] {
            if let Some(value) = parts.headers.get(&name) {
                headers.insert(name, value.clone());
            }
        }
        *request.extensions_mut() = parts.extensions;

        let Ok(response) = inner.oneshot(request).await;
        let (mut head, body) = response.into_parts();
        let dues = head.extensions.remove::<Dues>();
        let outcome = read_reply::<R, RB>(&head.headers, body).await;
        match outcome {
            Ok(reply) => {
                let (content_type, bytes) = render(reply);
                let mut response = render::answer(StatusCode::OK, content_type, bytes);
                if let Some(dues) = dues {
                    response.extensions_mut().insert(dues);
                }
                response
            }
            Err(status) => {
                // Nothing of what was drawn reaches the caller.
                for settle in dues.iter().flat_map(Dues::rest) {
                    settle.discarded();
                }
                render::failed(&status)
            }
        }
    }
}

/// The one message of a unary gRPC response, or its status.
async fn read_reply<R: Message + Default, RB>(
    headers: &http::HeaderMap,
    body: RB,
) -> Result<R, tonic::Status>
where
    RB: http_body::Body<Data = Bytes>,
    RB::Error: Into<tonic::Status>,
{
    // A trailers-only response (an error before any message) has its status in the head.
    if let Some(status) = tonic::Status::from_header_map(headers)
        && status.code() != tonic::Code::Ok
    {
        return Err(status);
    }
    let collected = body.collect().await.map_err(Into::into)?;
    if let Some(status) = collected.trailers().and_then(tonic::Status::from_header_map)
        && status.code() != tonic::Code::Ok
    {
        return Err(status);
    }
    let mut bytes = collected.to_bytes();
    let malformed = |why: &str| crate::grpc::errors::internal("REST reply", &why);
    if bytes.len() < 5 || bytes[0] != 0 {
        return Err(malformed("no uncompressed message in the reply"));
    }
    let len = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]) as usize;
    bytes.advance(5);
    if bytes.len() != len {
        return Err(malformed("the reply's length prefix does not match its body"));
    }
    R::decode(bytes).map_err(|e| crate::grpc::errors::internal("REST reply", &e))
}
