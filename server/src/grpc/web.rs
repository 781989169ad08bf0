//! gRPC-Web for browsers on the public listener: tonic-web's protocol translation behind a CORS
//! gate that admits only the configured origins. Off unless `grpc_web_enabled`.
//!
//! Only EntropyService is wrapped, so a browser reaches nothing else (health and reflection stay
//! native gRPC). The wrapped service is the very one native clients call, behind the same API-key
//! interceptor, quotas and message limits, and the connection counts against the same
//! `max_connections` and idle timeout; gRPC-Web only changes the framing (and, over plaintext,
//! lets HTTP/1.1 in, which a browser needs: it speaks HTTP/2 only over TLS).
//!
//! The CORS rules, for a request that carries an `Origin` header:
//! - the origin must equal one of `grpc_web_allowed_origins` byte for byte, else 403 (preflight
//!   or not, so a page elsewhere cannot even learn the status);
//! - a preflight (`OPTIONS` with `Access-Control-Request-Method: POST`) is answered here with 204
//!   and the headers gRPC-Web needs; any other method is refused with 403;
//! - an actual call goes through and its response names the origin and exposes `grpc-status`,
//!   `grpc-message` and `retry-after-ms` to the page.
//!
//! There is no wildcard and no `Access-Control-Allow-Credentials`: the key travels in a header
//! the page sets, never in a cookie, so the browser has no ambient credential to send for
//! another site, and an exact list is what a deployment with known front ends needs. Requests
//! without `Origin` (native gRPC, curl) pass through untouched.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_METHOD, ORIGIN,
    VARY,
};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use tonic::body::Body;
use tonic::server::NamedService;
use tonic_web::{GrpcWebLayer, GrpcWebService};
use tower::{Layer, Service};

/// Most entries in `grpc_web_allowed_origins`.
pub(crate) const MAX_ORIGINS: usize = 64;
/// Longest origin accepted in `grpc_web_allowed_origins`, in bytes.
pub(crate) const MAX_ORIGIN_BYTES: usize = 256;

/// Request headers a gRPC-Web page may send (the key, the framing, the deadline).
const ALLOW_HEADERS: &str =
    "authorization, x-api-key, content-type, x-grpc-web, x-user-agent, grpc-timeout";
/// Response headers and trailers the page may read.
const EXPOSE_HEADERS: &str = "grpc-status, grpc-message, grpc-status-details-bin, retry-after-ms";
/// How long a browser may cache a preflight answer, in seconds.
const PREFLIGHT_MAX_AGE_S: &str = "600";

/// A browser origin as browsers send it, parsed once where the configuration is read (an entry
/// of `grpc_web_allowed_origins` that is not one fails the load, naming the key).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Origin(HeaderValue);

impl TryFrom<String> for Origin {
    type Error = String;

    fn try_from(origin: String) -> Result<Self, Self::Error> {
        check_origin(&origin).map_err(|why| format!("{origin:?}: {why}"))?;
        // check_origin admits only ASCII letters, digits and `:/.-[]`: a valid header value.
        HeaderValue::from_str(&origin).map(Self).map_err(|e| format!("{origin:?}: {e}"))
    }
}

impl From<Origin> for String {
    fn from(origin: Origin) -> Self {
        String::from_utf8_lossy(origin.0.as_bytes()).into_owned()
    }
}

impl PartialEq<&str> for Origin {
    fn eq(&self, other: &&str) -> bool {
        self.0.as_bytes() == other.as_bytes()
    }
}

/// gRPC-Web on, for these browser origins.
#[derive(Debug, Clone)]
pub(crate) struct GrpcWeb {
    origins: Arc<[HeaderValue]>,
}

impl GrpcWeb {
    /// gRPC-Web for `origins`, or `None` when `enabled` is false.
    pub(crate) fn new(enabled: bool, origins: &[Origin]) -> Option<Self> {
        let origins = origins.iter().map(|o| o.0.clone()).collect();
        enabled.then_some(Self { origins })
    }

    /// `service` speaking gRPC-Web as well as gRPC, behind the CORS gate.
    pub(crate) fn wrap<S>(&self, service: S) -> BrowserGate<GrpcWebService<S>> {
        tracing::info!(
            origins = ?self.origins,
            "gRPC-Web enabled for EntropyService and ReceiptLogService on the public listener"
        );
        BrowserGate { inner: GrpcWebLayer::new().layer(service), origins: self.origins.clone() }
    }
}

/// The CORS gate in front of a gRPC-Web service (see the module notes for its rules).
#[derive(Debug, Clone)]
pub(crate) struct BrowserGate<S> {
    inner: S,
    origins: Arc<[HeaderValue]>,
}

impl<S: NamedService> NamedService for BrowserGate<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> BrowserGate<S> {
    /// Whether `origin` is one of the configured ones, byte for byte.
    fn allows(&self, origin: &HeaderValue) -> bool {
        self.origins.iter().any(|o| o.as_bytes() == origin.as_bytes())
    }
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

impl<S> Service<Request<Body>> for BrowserGate<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> BoxFuture {
        let Some(origin) = request.headers().get(ORIGIN).cloned() else {
            let call = self.inner.call(request);
            return Box::pin(call);
        };
        if !self.allows(&origin) {
            tracing::debug!(?origin, "gRPC-Web request from an origin not allowed: 403");
            return ready(StatusCode::FORBIDDEN, None);
        }
        if request.method() == Method::OPTIONS {
            let method = request.headers().get(ACCESS_CONTROL_REQUEST_METHOD);
            if method.is_none_or(|m| m.as_bytes() != b"POST") {
                return ready(StatusCode::FORBIDDEN, None);
            }
            return ready(StatusCode::NO_CONTENT, Some(origin));
        }
        let call = self.inner.call(request);
        Box::pin(async move {
            let mut response = call.await?;
            let headers = response.headers_mut();
            headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSE_HEADERS));
            headers.append(VARY, HeaderValue::from_static("origin"));
            Ok(response)
        })
    }
}

/// An answer made here: 403, or (with the allowed `origin`) a preflight's 204.
fn ready(status: StatusCode, preflight_origin: Option<HeaderValue>) -> BoxFuture {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(VARY, HeaderValue::from_static("origin"));
    if let Some(origin) = preflight_origin {
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("POST"));
        headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static(ALLOW_HEADERS));
        headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static(PREFLIGHT_MAX_AGE_S));
    }
    Box::pin(std::future::ready(Ok(response)))
}

/// One origin as browsers send it: `http` or `https`, `://`, a lowercase host name or IP
/// address, an optional port, and nothing else.
fn check_origin(origin: &str) -> Result<(), String> {
    if origin.len() > MAX_ORIGIN_BYTES {
        return Err(format!("longer than {MAX_ORIGIN_BYTES} bytes"));
    }
    if origin.contains('*') {
        return Err("wildcards are not accepted: list each origin exactly".into());
    }
    let Some(rest) = origin.strip_prefix("https://").or_else(|| origin.strip_prefix("http://"))
    else {
        return Err("must start with http:// or https:// (like https://app.example.com)".into());
    };
    const SHAPE: &str = "the host must be lowercase letters, digits, '.' and '-' (or an IPv6 \
                         address in brackets), and no path, query or trailing '/' may follow";
    let (host_ok, port) = match rest.strip_prefix('[') {
        // An IPv6 literal: [::1] or [::1]:8080.
        Some(v6) => {
            let Some((addr, after)) = v6.split_once(']') else { return Err(SHAPE.into()) };
            let port = match after {
                "" => None,
                _ => Some(after.strip_prefix(':').ok_or(SHAPE)?),
            };
            (addr.parse::<std::net::Ipv6Addr>().is_ok(), port)
        }
        None => {
            let (host, port) = match rest.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (rest, None),
            };
            let name =
                |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-';
            (!host.is_empty() && host.bytes().all(name), port)
        }
    };
    if !host_ok {
        return Err(SHAPE.into());
    }
    if let Some(port) = port {
        let valid = port.bytes().all(|b| b.is_ascii_digit())
            && port.parse::<u16>().is_ok_and(|p| p != 0)
            && !port.starts_with('0');
        if !valid {
            return Err(format!("port {port:?} must be 1..=65535"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_exact_and_well_formed() {
        for good in [
            "https://app.example.com",
            "http://127.0.0.1:8080",
            "http://localhost:3000",
            "https://[::1]:8443",
            "https://[::1]",
        ] {
            assert_eq!(check_origin(good), Ok(()), "{good}");
        }
        for (bad, why) in [
            ("*", "wildcard"),
            ("https://*.example.com", "wildcard"),
            ("null", "http://"),
            ("app.example.com", "http://"),
            ("https://app.example.com/", "trailing"),
            ("https://app.example.com/path", "trailing"),
            ("https://App.example.com", "lowercase"),
            ("https://user@example.com", "lowercase"),
            ("https://example.com:0", "1..=65535"),
            ("https://example.com:99999", "1..=65535"),
            ("https://example.com:", "1..=65535"),
            ("https://[zz]:1", "IPv6"),
            ("https://[::1]x", "trailing"),
            ("https://[::1]/", "trailing"),
            ("https://", "lowercase"),
        ] {
            let err = check_origin(bad).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn an_origin_is_parsed_once_and_keeps_its_text() {
        let origin = Origin::try_from("https://a.example:8443".to_string()).expect("valid");
        assert_eq!(String::from(origin.clone()), "https://a.example:8443");
        assert_eq!(origin, "https://a.example:8443");
        let err = Origin::try_from("*".to_string()).expect_err("wildcard");
        assert!(err.starts_with("\"*\": wildcards"), "{err}");
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
    fn origins_come_from_a_toml_array_in_the_environment_or_a_comma_list_flag() {
        use crate::process::config::{ConfigFlags, Mode, load};
        use clap::Parser;

        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            flags: ConfigFlags,
        }
        let cli = Cli::try_parse_from([
            "entropy-gateway",
            "--grpc-web-enabled",
            "true",
            "--grpc-web-allowed-origins",
            "https://a.example,http://127.0.0.1:8080",
        ])
        .expect("flags parse");
        figment::Jail::expect_with(|jail| {
            let c = load(None, Mode::DEV, &cli.flags).expect("valid");
            assert!(c.grpc_web_enabled);
            assert_eq!(c.grpc_web_allowed_origins, ["https://a.example", "http://127.0.0.1:8080"]);

            jail.set_env("ENTROPY_GRPC_WEB_ENABLED", "true");
            jail.set_env("ENTROPY_GRPC_WEB_ALLOWED_ORIGINS", r#"["https://b.example"]"#);
            let c = load(None, Mode::DEV, &ConfigFlags::default()).expect("valid");
            assert_eq!(c.grpc_web_allowed_origins, ["https://b.example"]);

            // The entry that is not an origin is named, by its place in the list.
            jail.set_env("ENTROPY_GRPC_WEB_ALLOWED_ORIGINS", r#"["https://b.example", "*"]"#);
            let err = load(None, Mode::DEV, &ConfigFlags::default()).expect_err("wildcard");
            assert_eq!(err.key, "grpc_web_allowed_origins.1");
            assert!(err.problem.contains("\"*\": wildcards are not accepted"), "{err}");

            // Listed while off, or too many: the key's rules.
            jail.set_env("ENTROPY_GRPC_WEB_ENABLED", "false");
            jail.set_env("ENTROPY_GRPC_WEB_ALLOWED_ORIGINS", r#"["https://b.example"]"#);
            let err = load(None, Mode::DEV, &ConfigFlags::default()).expect_err("disabled");
            assert_eq!(err.key, "grpc_web_allowed_origins");
            assert!(err.problem.contains("grpc_web_enabled is false"), "{err}");
            jail.set_env("ENTROPY_GRPC_WEB_ENABLED", "true");
            let many: Vec<String> =
                (0..=MAX_ORIGINS).map(|i| format!("\"https://h{i}.example\"")).collect();
            jail.set_env("ENTROPY_GRPC_WEB_ALLOWED_ORIGINS", format!("[{}]", many.join(",")));
            let err = load(None, Mode::DEV, &ConfigFlags::default()).expect_err("too many");
            assert!(err.problem.contains("at most 64"), "{err}");
            Ok(())
        });
    }
}
