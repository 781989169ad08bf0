//! Connecting with a key (and TLS), and the unary calls.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use entropy_proto::v1::entropy_service_client::EntropyServiceClient;
use entropy_proto::v1::{
    CheckQualityRequest, CheckQualityResponse, Construction, DrawProvenance, GetFloatsRequest,
    GetIntegersRequest, GetRandomRequest, GetStatusRequest, GetStatusResponse, GetUsageRequest,
    GetUsageResponse, GetUuidsRequest, SourceKind,
};
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use crate::api_key;
use crate::endpoint::DEFAULT_PORT;
use crate::error::Error;
use crate::reconnect::StreamOptions;
use crate::stream::RandomStream;

/// Adds `authorization: Bearer <key>` to every call.
#[derive(Clone)]
pub(crate) struct BearerKey(MetadataValue<Ascii>);

impl Interceptor for BearerKey {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        request.metadata_mut().insert("authorization", self.0.clone());
        Ok(request)
    }
}

pub(crate) type Inner = EntropyServiceClient<InterceptedService<Channel, BearerKey>>;

/// A connection to a gateway. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct Client {
    inner: Inner,
    /// Where the client connects (`host:port` as given), named in errors of the transport.
    target: Arc<str>,
    timeout: Option<Duration>,
    want: Want,
}

/// What every entropy call and stream of a client asks for, besides its size.
#[derive(Debug, Clone, Default)]
pub(crate) struct Want {
    /// The source kinds accepted (`accept_kinds`); empty: any.
    pub(crate) accept_kinds: Vec<i32>,
    /// RAW (0, the default) or a DRBG construction (`construction`).
    pub(crate) construction: i32,
}

/// Bytes and where they came from (see [`Client::draw`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Draw {
    /// The bytes.
    pub data: Vec<u8>,
    /// The source kinds, collectors and chunks behind them, and the age of the oldest byte.
    pub provenance: Option<DrawProvenance>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("target", &self.target)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// How long a unary call may take by default (the gateway answers UNAVAILABLE after its own
/// `max_wait_ms`, 2 s by default, when the pool runs dry: this bounds network trouble).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How many bytes a stream may receive ahead of its reader by default (see
/// [`ClientBuilder::stream_window`]).
pub const DEFAULT_STREAM_WINDOW: u32 = 4 << 20;

/// Settings for [`Client`].
#[derive(Clone)]
pub struct ClientBuilder {
    endpoint: String,
    api_key: String,
    ca_file: Option<PathBuf>,
    timeout: Option<Duration>,
    connect_timeout: Duration,
    /// HTTP/2 receive window of each stream, in bytes.
    stream_window: u32,
    want: Want,
    /// An `ENTROPY_CONSTRUCTION` that names no construction, reported by `connect`.
    bad_construction: Option<String>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("endpoint", &self.endpoint)
            .field("ca_file", &self.ca_file)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive() // never the key
    }
}

impl ClientBuilder {
    /// Calls go to `endpoint` (`host:port`, `http://host:port` or `https://host:port`; see
    /// [`crate::Endpoint`]) with `api_key`.
    pub fn new(endpoint: impl Into<String>, api_key: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            api_key: api_key.into(),
            ca_file: None,
            timeout: Some(DEFAULT_TIMEOUT),
            connect_timeout: Duration::from_secs(10),
            stream_window: DEFAULT_STREAM_WINDOW,
            want: Want::default(),
            bad_construction: None,
        }
    }

    /// From the environment: `ENTROPY_ENDPOINT` (default `127.0.0.1:50051`),
    /// `ENTROPY_API_KEY`, `ENTROPY_CA_FILE` (optional) and `ENTROPY_CONSTRUCTION` (`raw`, the
    /// default, `drbg` or `drbg-prediction-resistant`; any other value fails [`connect`](Self::connect)).
    /// Later calls override each.
    pub fn from_env() -> Self {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        let endpoint =
            var("ENTROPY_ENDPOINT").unwrap_or_else(|| format!("127.0.0.1:{DEFAULT_PORT}"));
        let mut builder = Self::new(endpoint, var("ENTROPY_API_KEY").unwrap_or_default());
        builder.ca_file = var("ENTROPY_CA_FILE").map(PathBuf::from);
        match var("ENTROPY_CONSTRUCTION").as_deref() {
            None | Some("raw") => {}
            Some("drbg") => builder = builder.construction(Construction::Drbg),
            Some("drbg-prediction-resistant") => {
                builder = builder.construction(Construction::DrbgPredictionResistant);
            }
            Some(other) => builder.bad_construction = Some(other.to_owned()),
        }
        builder
    }

    /// Calls go to `endpoint` instead.
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = endpoint.into();
        self
    }

    /// Calls carry `api_key` instead.
    pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = api_key.into();
        self
    }

    /// Trust the CA certificates in this PEM file (default: the web PKI roots). A scheme-less
    /// endpoint then uses TLS, loopback too.
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// Accept only bytes whose contributing sources are all of these kinds, on every call and
    /// stream (`accept_kinds`); empty (the default) accepts any. A gateway fed none of them
    /// answers [`Error::FailedPrecondition`] naming what its pool holds.
    pub fn accept_kinds(mut self, kinds: impl IntoIterator<Item = SourceKind>) -> Self {
        self.want.accept_kinds = kinds.into_iter().map(|k| k as i32).collect();
        self
    }

    /// Ask for `construction` on every entropy call and stream: [`Construction::Raw`] (the
    /// default: pool bytes, each served once) or a DRBG construction (the output of a DRBG
    /// instance of the call's or stream's own, seeded from the pool, labelled in each
    /// response's provenance, `drbg`). A DRBG construction needs the key's `entropy:drbg`
    /// scope ([`Error::PermissionDenied`] otherwise). Streams keep it across reconnects.
    pub fn construction(mut self, construction: Construction) -> Self {
        self.want.construction = construction as i32;
        self.bad_construction = None;
        self
    }

    /// How many bytes a stream may receive ahead of its reader (the HTTP/2 stream window;
    /// at least 65,535, the protocol's initial window). Default [`DEFAULT_STREAM_WINDOW`], so
    /// streams keep up on links with latency; a reader that must bound what sits unread in its
    /// process (a host feeder testing bytes before use) asks for less.
    pub fn stream_window(mut self, bytes: u32) -> Self {
        self.stream_window = bytes.max(65_535);
        self
    }

    /// Deadline of each unary call (sent as `grpc-timeout`, and enforced here); `None` for
    /// none. Default [`DEFAULT_TIMEOUT`].
    pub fn timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.timeout = timeout.into();
        self
    }

    /// Builds the client after checking the endpoint and the key (the error never holds the
    /// key). Like other gRPC clients it connects lazily: the first call dials, and a call's
    /// deadline covers connecting too. An unreachable gateway shows up as `Unavailable` (or
    /// `DeadlineExceeded`) on the first call.
    pub async fn connect(self) -> Result<Client, Error> {
        if let Some(bad) = &self.bad_construction {
            return Err(Error::Config(format!(
                "ENTROPY_CONSTRUCTION is {bad:?}; it must be raw, drbg or drbg-prediction-resistant"
            )));
        }
        api_key::check(&self.api_key)?;
        let target = crate::Endpoint::parse(&self.endpoint, self.ca_file.is_some())?;
        let key = format!("Bearer {}", self.api_key)
            .parse::<MetadataValue<Ascii>>()
            .map_err(|_| Error::Config("the API key must be visible ASCII".into()))?;
        let mut endpoint = Endpoint::from_shared(target.uri())
            .map_err(|e| Error::Config(format!("endpoint {:?}: {e}", self.endpoint)))?
            .connect_timeout(self.connect_timeout)
            .tcp_nodelay(true)
            // Streams move megabytes: the 64 KiB default window caps them on links with latency.
            .initial_stream_window_size(Some(self.stream_window))
            .initial_connection_window_size(Some(self.stream_window.max(16 << 20)))
            .http2_keep_alive_interval(Duration::from_secs(30))
            .keep_alive_while_idle(true);
        if target.tls {
            let mut tls = ClientTlsConfig::new();
            tls = match &self.ca_file {
                Some(path) => {
                    let pem = std::fs::read(path)
                        .map_err(|e| Error::Config(format!("ca file {}: {e}", path.display())))?;
                    tls.ca_certificate(Certificate::from_pem(pem))
                }
                None => tls.with_webpki_roots(),
            };
            endpoint = endpoint.tls_config(tls).map_err(|e| Error::Config(e.to_string()))?;
        }
        let channel = endpoint.connect_lazy();
        let inner = EntropyServiceClient::with_interceptor(channel, BearerKey(key))
            .max_decoding_message_size(4 << 20);
        let target = Arc::from(self.endpoint.as_str());
        Ok(Client { inner, target, timeout: self.timeout, want: self.want })
    }
}

impl Client {
    /// Connects to `endpoint` with `api_key` and default settings (see [`ClientBuilder`]).
    pub async fn connect(endpoint: &str, api_key: &str) -> Result<Self, Error> {
        ClientBuilder::new(endpoint, api_key).connect().await
    }

    /// This client (sharing its connection) asking for `construction` instead: pool bytes
    /// ([`Construction::Raw`]) or DRBG output seeded from the pool (see
    /// [`ClientBuilder::construction`]).
    #[must_use]
    pub fn with_construction(&self, construction: Construction) -> Self {
        let mut client = self.clone();
        client.want.construction = construction as i32;
        client
    }

    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Some(t) = self.timeout {
            request.set_timeout(t);
        }
        request
    }

    /// Awaits a call, bounded by the deadline here too: `grpc-timeout` only tells the server,
    /// and a server that never answers (or a connection that never completes) must not hang us.
    async fn call<T>(
        &self,
        call: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    ) -> Result<T, Error> {
        let located = |status| Error::from(crate::error::locate(status, &self.target));
        let Some(t) = self.timeout else {
            return call.await.map(tonic::Response::into_inner).map_err(located);
        };
        let deadline = tokio::time::Instant::now() + t;
        let late = || Error::DeadlineExceeded(format!("no answer within {t:?}"));
        match tokio::time::timeout_at(deadline, call).await {
            Ok(Ok(response)) => Ok(response.into_inner()),
            // tonic enforces grpc-timeout on the client too, reporting it as CANCELLED.
            Ok(Err(status))
                if status.code() == tonic::Code::Cancelled
                    && tokio::time::Instant::now() >= deadline =>
            {
                Err(late())
            }
            Ok(Err(status)) => Err(located(status)),
            Err(_) => Err(late()),
        }
    }

    /// Exactly `n` random bytes (1..=1048576).
    pub async fn get_bytes(&self, n: u32) -> Result<Vec<u8>, Error> {
        Ok(self.draw(n).await?.data)
    }

    /// Exactly `n` random bytes (1..=1048576) with their provenance: the source kinds,
    /// collectors and chunks behind them, and how long the oldest waited in the gateway; for
    /// a DRBG construction, the instance that made them (`drbg`) and where its seeds came from.
    pub async fn draw(&self, n: u32) -> Result<Draw, Error> {
        let request = self.request(GetRandomRequest {
            num_bytes: n,
            encoding: 0,
            accept_kinds: self.want.accept_kinds.clone(),
            construction: self.want.construction,
            receipt: false,
        });
        let response = self.call(self.inner.clone().get_random(request)).await?;
        Ok(Draw { data: response.data, provenance: response.provenance })
    }

    /// Draws `sample_bytes` (2500..=4194304) that no one is ever served, and returns the
    /// gateway's statistics on them with one verdict (`passed`, `failures`, `thresholds`).
    /// Needs the `quality:check` scope.
    pub async fn check_quality(&self, sample_bytes: u32) -> Result<CheckQualityResponse, Error> {
        let request = self.request(CheckQualityRequest {
            sample_bytes,
            accept_kinds: self.want.accept_kinds.clone(),
            construction: self.want.construction,
        });
        self.call(self.inner.clone().check_quality(request)).await
    }

    /// `count` (1..=10000) uniform integers in `[min, max]`, unbiased.
    pub async fn get_integers(&self, min: i64, max: i64, count: u32) -> Result<Vec<i64>, Error> {
        let request = self.request(GetIntegersRequest {
            min,
            max,
            count,
            accept_kinds: self.want.accept_kinds.clone(),
            construction: self.want.construction,
            receipt: false,
        });
        Ok(self.call(self.inner.clone().get_integers(request)).await?.values)
    }

    /// `count` (1..=10000) uniform doubles in [0, 1), 53 random bits each.
    pub async fn get_floats(&self, count: u32) -> Result<Vec<f64>, Error> {
        let request = self.request(GetFloatsRequest {
            count,
            accept_kinds: self.want.accept_kinds.clone(),
            construction: self.want.construction,
            receipt: false,
        });
        Ok(self.call(self.inner.clone().get_floats(request)).await?.values)
    }

    /// `count` (1..=10000) random (version 4) UUIDs.
    pub async fn get_uuids(&self, count: u32) -> Result<Vec<uuid::Uuid>, Error> {
        let request = self.request(GetUuidsRequest {
            count,
            accept_kinds: self.want.accept_kinds.clone(),
            construction: self.want.construction,
            receipt: false,
        });
        let uuids = self.call(self.inner.clone().get_uuids(request)).await?.uuids;
        uuids
            .iter()
            .map(|u| {
                uuid::Uuid::parse_str(u).map_err(|_| Error::Other {
                    code: tonic::Code::Internal,
                    message: format!("gateway sent a malformed UUID {u:?}"),
                })
            })
            .collect()
    }

    /// The gateway's pool, counters and sources.
    pub async fn status(&self) -> Result<GetStatusResponse, Error> {
        self.call(self.inner.clone().get_status(self.request(GetStatusRequest {}))).await
    }

    /// This client's key's limits and what is left of each now: calls and bytes per second
    /// (with when they refill), streams open, bytes drawn and not yet read. Any valid key may
    /// ask, about itself only; asking costs none of it.
    pub async fn usage(&self) -> Result<GetUsageResponse, Error> {
        self.call(self.inner.clone().get_usage(self.request(GetUsageRequest {}))).await
    }

    /// A byte stream of `total` bytes (or endless with `None`), fetched in messages of
    /// `chunk_bytes`; it implements `AsyncRead` and reconnects after transport errors with the
    /// default rule ([`StreamOptions::default`]).
    pub fn stream(&self, total: Option<u64>, chunk_bytes: u32) -> RandomStream {
        self.stream_with(total, StreamOptions::default().chunk_bytes(chunk_bytes))
    }

    /// [`Client::stream`] with its message size and reconnect rule given.
    pub fn stream_with(&self, total: Option<u64>, options: StreamOptions) -> RandomStream {
        RandomStream::new(
            (self.inner.clone(), self.target.clone()),
            total,
            options,
            self.want.clone(),
        )
    }
}
