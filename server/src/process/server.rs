//! Assembling and running the gateway: two listeners, their services, shutdown.
//!
//! [`Gateway::serve`] takes already-bound listeners, so tests bind `127.0.0.1:0` and `main`
//! binds the configured addresses only after the config validated.

use std::sync::Arc;
use std::time::Duration;

use entropy_proto::v1::entropy_service_server::EntropyServiceServer;
use entropy_proto::v1::ingest_service_server::IngestServiceServer;
use entropy_proto::v1::receipt_log_service_server::ReceiptLogServiceServer;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tonic::service::Routes;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;
use tower::Layer as _;

use crate::domain::allowance::Budget;
use crate::domain::auth::ApiKeys;
use crate::domain::ingest::Ingest;
use crate::domain::ingest::keys::MacKeys;
use crate::domain::ingest::lease::{Lease, new_state_accepts_from};
use crate::domain::ingest::verify::VerifyPolicy;
use crate::domain::pool::Pool;
use crate::domain::readiness::Readiness;
use crate::domain::receipts::Notary;
use crate::domain::served::Totals;
use crate::grpc::auth::{ApiKeyAuth, KeyStore, TagMethod, key_store};
use crate::grpc::connect::Connect;
use crate::grpc::entropy_service::EntropyApi;
use crate::grpc::health::{INGEST_SERVICE, PUBLIC_SERVICE};
use crate::grpc::ingest_service::IngestApi;
use crate::grpc::one_message::OneMessageLayer;
use crate::grpc::receipt_log::ReceiptLogApi;
use crate::grpc::rest::Rest;
use crate::grpc::stream_random::ShutdownCuts;
use crate::grpc::web::GrpcWeb;
use crate::metrics::GatewayMetrics;
use crate::process::config::GatewayConfig;
use crate::process::ops_endpoint::GatewayProbe;
use crate::transport::{
    self, Admission, ConnectionLimits, Http1, Http2Settings, Listener, TrackCallsLayer,
};

/// Largest request on the public listener. Every EntropyService request is a few bytes; this
/// leaves room for future fields while refusing junk early.
pub const MAX_PUBLIC_REQUEST_BYTES: usize = 16 << 10;
/// Protobuf overhead allowed on top of `max_chunk_bytes` for a Publish request.
pub(crate) const PUBLISH_OVERHEAD_BYTES: usize = 64 << 10;
/// HTTP/2 stream and connection windows on the public listener: requests are a few bytes,
/// and at most this much sits unread in h2 per connection (HTTP/2's smallest window).
pub(crate) const PUBLIC_WINDOW: u32 = 65_535;
/// HTTP/2 stream window on the ingest listener.
pub(crate) const INGEST_STREAM_WINDOW: u32 = 1 << 20;
/// HTTP/2 connection window on the ingest listener.
pub(crate) const INGEST_CONNECTION_WINDOW: u32 = 2 << 20;
/// SETTINGS_MAX_FRAME_SIZE of the ingest listener: the largest DATA frame a collector may send.
pub(crate) const INGEST_MAX_FRAME: u32 = 256 << 10;
/// SETTINGS_MAX_FRAME_SIZE of the public listener (HTTP/2's default).
pub(crate) const PUBLIC_MAX_FRAME: u32 = 16 << 10;
/// SETTINGS_MAX_HEADER_LIST_SIZE on both listeners: the largest request header block.
pub(crate) const MAX_HEADER_LIST_BYTES: u32 = 16 << 10;
/// Most bytes h2 buffers for one stream, within what its window admits.
pub(crate) const MAX_SEND_BUFFER_BYTES: usize = 400 << 10;
/// Publishes in progress one ingest connection may hold (each its body, up to
/// `max_chunk_bytes` + [`PUBLISH_OVERHEAD_BYTES`], and what a call costs): a collector keeps a
/// few in flight; a peer without a MAC key cannot take the whole ingest budget alone.
pub(crate) const INGEST_PUBLISHES_PER_CONNECTION: usize = 8;
/// HTTP/2 keepalive: a PING this often, answered within [`KEEPALIVE_TIMEOUT`].
pub(crate) const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
/// See [`KEEPALIVE_INTERVAL`].
pub(crate) const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// The gateway's state, ready to serve.
#[derive(Debug)]
pub struct Gateway {
    config: GatewayConfig,
    api_keys: KeyStore,
    pool: Arc<Pool>,
    ingest: Arc<Ingest>,
    readiness: Arc<Readiness>,
    tls: ListenerTls,
    metrics: Arc<GatewayMetrics>,
    /// Where `/metrics`, `/healthz` and `/readyz` are served, if anywhere.
    metrics_listener: Option<TcpListener>,
    /// The streams the shutdown ends with bytes still to send.
    cuts: ShutdownCuts,
    /// The process-wide byte allowances.
    budget: Budget,
    /// Served, discarded and tested bytes.
    totals: Arc<Totals>,
    /// The receipt notary, once opened (`receipts_dir`; [`Gateway::with_notary`]).
    notary: Option<Arc<Notary>>,
}

/// TLS for each listener; `None` serves plaintext.
#[derive(Debug, Clone, Default)]
pub struct ListenerTls {
    /// The public listener.
    pub public: Option<Arc<rustls::ServerConfig>>,
    /// The ingest listener (with a client verifier for mTLS when configured).
    pub ingest: Option<Arc<rustls::ServerConfig>>,
}

/// The tasks [`Gateway::serve`] runs beside its listeners, awaited once they have stopped.
struct Upkeep {
    tasks: [tokio::task::JoinHandle<()>; 3],
    endpoint: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Upkeep {
    async fn finish(self) {
        for task in self.tasks {
            let _ = task.await;
        }
        if let Some(endpoint) = self.endpoint {
            match endpoint.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::error!("metrics endpoint failed: {e}"),
                Err(e) => tracing::error!("metrics endpoint task failed: {e}"),
            }
        }
    }
}

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The reflection service could not be built from the descriptors.
    #[error("reflection setup failed: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The compiled descriptors could not be read or filtered.
    #[error("public descriptors: {0}")]
    Descriptors(String),
    /// The receipt log could not be opened (`receipts_dir`).
    #[error("{0}")]
    Receipts(#[from] crate::domain::receipts::NotaryError),
}

/// How often idle pool bytes are checked against `max_byte_age_ms`.
const EXPIRY_TICK: std::time::Duration = std::time::Duration::from_millis(100);

impl Gateway {
    /// A gateway with an empty pool, accepting client keys `api_keys` and chunks signed under
    /// `mac_keys`, with its ingest lease in memory: what dev mode needs (its MAC key is new at
    /// every start, so no chunk of an earlier run verifies) and tests that never restart one.
    /// A gateway whose chunks must stay refused across restarts takes its lease from
    /// `state_dir` ([`Gateway::new_with_lease`], as `launch` does).
    ///
    /// `config` is taken as [`crate::process::fd_limit::prepare`] resolved it: its
    /// `max_connections` is the public listener's cap (`0` there would admit no connection).
    pub fn new(config: GatewayConfig, api_keys: ApiKeys, mac_keys: MacKeys) -> Self {
        let started = entropy_ops::clock::unix_ms_now();
        let lease = Lease::in_memory(new_state_accepts_from(started, config.max_future_skew()));
        Self::new_with_lease(config, api_keys, mac_keys, lease)
    }

    /// A gateway as [`Gateway::new`] makes it, keeping its ingest lease in `lease` (see
    /// [`crate::domain::ingest::lease`]): it accepts only chunks dated after every chunk an earlier run
    /// with this lease stored.
    pub fn new_with_lease(
        config: GatewayConfig,
        api_keys: ApiKeys,
        mac_keys: MacKeys,
        lease: Lease,
    ) -> Self {
        let key_label = config.metrics_key_label;
        let pool = Arc::new(Pool::with_limits(config.pool_capacity_bytes, config.pool_limits()));
        let policy = VerifyPolicy {
            max_chunk_bytes: config.max_chunk_bytes,
            freshness_window: config.freshness_window(),
            max_future_skew: config.max_future_skew(),
            started_unix_ms: entropy_ops::clock::unix_ms_now(),
            accepts_from_unix_ms: lease.accepts_from_unix_ms(),
            gateway_id: config.gateway_id.clone(),
        };
        let ingest = Arc::new(
            Ingest::new(pool.clone(), mac_keys, policy, config.replay_max_streams)
                .with_lease(lease),
        );
        let readiness = Arc::new(
            Readiness::new(pool.clone(), config.pool_low_watermark_bytes)
                .with_ingest_staleness(ingest.clone(), config.ingest_stale_after()),
        );
        Self {
            api_keys: key_store(api_keys),
            pool,
            ingest,
            readiness,
            tls: ListenerTls::default(),
            metrics: Arc::new(GatewayMetrics::new().with_key_label(key_label)),
            metrics_listener: None,
            cuts: ShutdownCuts::default(),
            budget: Budget::new(
                config.max_buffered_bytes,
                config.ingest_max_buffered_bytes,
                config.max_buffered_request_bytes,
            ),
            totals: Arc::default(),
            notary: None,
            config,
        }
    }

    /// Serves `/metrics`, `/healthz` and `/readyz` on `listener` too.
    pub fn with_metrics_listener(mut self, listener: TcpListener) -> Self {
        self.metrics_listener = Some(listener);
        self
    }

    /// This gateway's series (each gateway has a registry of its own).
    pub fn metrics(&self) -> &Arc<GatewayMetrics> {
        &self.metrics
    }

    /// Issues receipts with `notary`, opened beforehand (`launch` opens it before binding);
    /// without it, [`Gateway::serve`] opens the one `receipts_dir` names, if any.
    pub fn with_notary(mut self, notary: Option<Arc<Notary>>) -> Self {
        self.notary = notary;
        self
    }

    /// Serves TLS on the listeners `tls` names.
    pub fn with_tls(mut self, tls: ListenerTls) -> Self {
        self.tls = tls;
        self
    }

    /// The client keys in use; storing a new set takes effect for the next call (SIGHUP).
    pub fn key_store(&self) -> KeyStore {
        self.api_keys.clone()
    }

    /// Whether this gateway should receive traffic (what health and `/readyz` report).
    pub fn readiness(&self) -> Arc<Readiness> {
        self.readiness.clone()
    }

    /// How many streams the shutdown has ended with bytes still to send: each is a client
    /// that must resume elsewhere. Read it once serving has stopped (or the grace is over).
    pub fn shutdown_cuts(&self) -> ShutdownCuts {
        self.cuts.clone()
    }

    /// The start rule in force: chunks dated before this (Unix ms) are refused.
    pub fn accepts_chunks_from_unix_ms(&self) -> i64 {
        self.ingest.accepts_from_unix_ms()
    }

    /// The pool (for benchmarks and in-process checks).
    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// The process-wide byte allowances (what they hold now, for tests and metrics).
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Serves EntropyService (+ health, reflection) on `public` and IngestService (+ health) on
    /// `ingest` until `shutdown` fires, then drains: health goes NOT_SERVING, waiting takes
    /// fail with UNAVAILABLE, open streams end, and in-flight calls finish.
    pub async fn serve(
        mut self,
        public: TcpListener,
        ingest: TcpListener,
        shutdown: CancellationToken,
    ) -> Result<(), ServeError> {
        let streams = TaskTracker::new();
        if self.notary.is_none() {
            self.notary = crate::process::receipts::open(&self.config)?;
        }
        let head_signer = self.notary.clone().map(|notary| {
            let interval = std::time::Duration::from_millis(self.config.receipts_head_interval_ms);
            crate::process::receipts::spawn_head_signer(notary, interval, shutdown.clone())
        });
        let web = GrpcWeb::new(self.config.grpc_web_enabled, &self.config.grpc_web_allowed_origins);
        let (public_routes, public_health) =
            self.public_routes(web.as_ref(), &streams, &shutdown).await?;
        let http1 = public_http1(&self.config, self.tls.public.is_some());
        let (ingest_routes, ingest_health) = self.ingest_routes().await;
        let public_server = transport::serve(
            public,
            self.public_listener(http1),
            TrackCallsLayer.layer(public_routes),
            shutdown.clone(),
        );
        let ingest_server = transport::serve(
            ingest,
            self.ingest_listener(),
            TrackCallsLayer.layer(ingest_routes),
            shutdown.clone(),
        );
        let endpoint = self.metrics_listener.take();
        let tasks = self.spawn_upkeep((public_health, ingest_health), endpoint, &shutdown);

        tokio::join!(public_server, ingest_server);
        streams.close();
        streams.wait().await;
        tasks.finish().await;
        if let Some(signer) = head_signer {
            let _ = signer.await;
        }
        Ok(())
    }

    /// The public listener's services: EntropyService (behind the key check, and gRPC-Web's
    /// gate when `web` is on, and Connect's translation when `connect_enabled`), health and
    /// reflection. Every service refuses requests past the
    /// public cap: health and reflection requests are a few bytes, and tonic's 4 MiB default
    /// let one connection hold 256 × 4 MiB of partial messages.
    async fn public_routes(
        &self,
        web: Option<&GrpcWeb>,
        streams: &TaskTracker,
        shutdown: &CancellationToken,
    ) -> Result<(Routes, HealthReporter), ServeError> {
        let (health, health_service) = crate::grpc::health::public_health(&self.readiness).await;
        let health_service = health_service.max_decoding_message_size(MAX_PUBLIC_REQUEST_BYTES);
        let reflection_v1 =
            reflection()?.build_v1()?.max_decoding_message_size(MAX_PUBLIC_REQUEST_BYTES);
        let reflection_v1alpha =
            reflection()?.build_v1alpha()?.max_decoding_message_size(MAX_PUBLIC_REQUEST_BYTES);
        let api = EntropyApi::new(
            self.pool.clone(),
            self.ingest.clone(),
            self.readiness.clone(),
            self.config.max_wait(),
            shutdown.clone(),
            streams.clone(),
        )
        .with_stream_max_wait(self.config.stream_max_wait())
        .with_drbg_reseeding(self.config.drbg_reseeding())
        .with_shutdown_cuts(self.cuts.clone())
        .with_metrics(self.metrics.clone())
        .with_responses(self.budget.responses.clone())
        .with_totals(self.totals.clone())
        .with_notary(self.notary.clone());
        let receipt_log =
            OneMessageLayer.layer(TagMethod(tonic::service::interceptor::InterceptedService::new(
                ReceiptLogServiceServer::new(ReceiptLogApi::new(
                    self.notary.clone(),
                    self.metrics.clone(),
                    (self.budget.responses.clone(), self.totals.clone()),
                ))
                .max_decoding_message_size(MAX_PUBLIC_REQUEST_BYTES),
                ApiKeyAuth::new(self.api_keys.clone()).with_metrics(self.metrics.clone()),
            )));
        // Every method but reflection takes exactly one request message (one_message.rs).
        let entropy =
            OneMessageLayer.layer(TagMethod(tonic::service::interceptor::InterceptedService::new(
                EntropyServiceServer::new(api).max_decoding_message_size(MAX_PUBLIC_REQUEST_BYTES),
                ApiKeyAuth::new(self.api_keys.clone()).with_metrics(self.metrics.clone()),
            )));
        let connect = Connect::new(self.config.connect_enabled);
        let rest =
            self.config.rest_enabled.then(|| Rest::new(entropy.clone(), self.readiness.clone()));
        let routes = entropy_routes(entropy, web, connect);
        // The receipt log behind the same translations: browsers and Connect clients check
        // receipts too.
        let routes = match web {
            None => routes.add_service(connect.wrap(receipt_log)),
            Some(web) => routes.add_service(connect.wrap(web.wrap(receipt_log))),
        };
        let routes = routes
            .add_service(OneMessageLayer.layer(health_service))
            .add_service(reflection_v1)
            .add_service(reflection_v1alpha);
        let routes = match rest {
            // The REST routes call the same EntropyService stack (rest/mod.rs).
            Some(rest) => crate::grpc::rest::install(routes, rest),
            None => routes,
        };
        Ok((routes.prepare(), health))
    }

    /// The ingest listener's services: IngestService, whose requests may carry a chunk, and
    /// health (SERVING until shutdown).
    async fn ingest_routes(&self) -> (Routes, HealthReporter) {
        let (health, health_service) = tonic_health::server::health_reporter();
        health.set_service_status(INGEST_SERVICE, ServingStatus::Serving).await;
        health.set_service_status("", ServingStatus::Serving).await;
        let health_service = health_service.max_decoding_message_size(MAX_PUBLIC_REQUEST_BYTES);
        let api = OneMessageLayer.layer(
            IngestServiceServer::new(IngestApi::new(self.ingest.clone()))
                .max_decoding_message_size(self.config.max_chunk_bytes + PUBLISH_OVERHEAD_BYTES),
        );
        (Routes::new(api).add_service(health_service).prepare(), health)
    }

    /// The public listener: `max_connections` (as resolved), HTTP/2's smallest windows, and
    /// HTTP/1.1 too as `http1` says ([`public_http1`]).
    fn public_listener(&self, http1: Http1) -> Listener {
        let config = &self.config;
        Listener {
            admission: Admission::new(
                "public",
                config.max_connections,
                ConnectionLimits {
                    idle_timeout: config.idle_timeout(),
                    send_timeout: config.send_timeout(),
                    max_undelivered_bytes: config.max_undelivered_bytes_per_connection,
                    max_buffered_request_bytes: config.max_buffered_request_bytes_per_connection,
                },
                self.metrics.connections("public"),
                true,
            ),
            http1,
            tls: match &self.tls.public {
                Some(tls) if http1.any() => Some(transport::tls::with_http1(tls)),
                tls => tls.clone(),
            },
            http2: Http2Settings {
                stream_window: PUBLIC_WINDOW,
                connection_window: PUBLIC_WINDOW,
                max_frame: PUBLIC_MAX_FRAME,
                ..http2_settings(config.max_streams_per_connection)
            },
            requests: self.budget.requests.clone(),
            events: self.metrics.transport_events("public"),
        }
    }

    /// The ingest listener: a few publishes in flight per connection, within the ingest part
    /// of the budget. A chunk comes in a few DATA frames rather than 64 of 16 KiB: fewer frames
    /// to parse and buffers to join per chunk (bench/README.md, "Performance"). The windows
    /// bound what a connection can make the gateway hold beyond its share of the ingest
    /// budget: 2 MiB a connection, one 1 MiB chunk a stream.
    fn ingest_listener(&self) -> Listener {
        let config = &self.config;
        Listener {
            admission: Admission::new(
                "ingest",
                config.ingest_max_connections,
                ConnectionLimits {
                    idle_timeout: config.idle_timeout(),
                    send_timeout: config.send_timeout(),
                    max_undelivered_bytes: 0,
                    max_buffered_request_bytes: INGEST_PUBLISHES_PER_CONNECTION
                        * (config.max_chunk_bytes
                            + PUBLISH_OVERHEAD_BYTES
                            + transport::CALL_BYTES
                            + MAX_HEADER_LIST_BYTES as usize),
                },
                self.metrics.connections("ingest"),
                false,
            ),
            tls: self.tls.ingest.clone(),
            http2: Http2Settings {
                stream_window: INGEST_STREAM_WINDOW,
                connection_window: INGEST_CONNECTION_WINDOW,
                max_frame: INGEST_MAX_FRAME,
                ..http2_settings(config.max_streams_per_connection)
            },
            http1: Http1::default(),
            requests: self.budget.ingest.clone(),
            events: self.metrics.transport_events("ingest"),
        }
    }

    /// The tasks beside the listeners: readiness published on health, the shutdown's first
    /// steps (stop reporting SERVING, fail waiting takes at once; streams watch the same token
    /// and end themselves), the pool's age limit on a timer, metrics upkeep and endpoint.
    fn spawn_upkeep(
        &self,
        (public_health, ingest_health): (HealthReporter, HealthReporter),
        endpoint: Option<TcpListener>,
        shutdown: &CancellationToken,
    ) -> Upkeep {
        let watcher = tokio::spawn(crate::grpc::health::watch(
            self.readiness.clone(),
            vec![public_health],
            shutdown.clone(),
        ));
        let closer = tokio::spawn({
            let (shutdown, pool, readiness) =
                (shutdown.clone(), self.pool.clone(), self.readiness.clone());
            async move {
                shutdown.cancelled().await;
                readiness.stop();
                pool.close();
                ingest_health.set_service_status(INGEST_SERVICE, ServingStatus::NotServing).await;
                ingest_health.set_service_status("", ServingStatus::NotServing).await;
            }
        });
        // With an age limit, idle bytes expire on a timer too (stores and takes expire first).
        if self.pool.limits().max_byte_age.is_some() {
            let (pool, shutdown) = (self.pool.clone(), shutdown.clone());
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(EXPIRY_TICK);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        _ = tick.tick() => pool.expire(),
                    }
                }
            });
        }
        let upkeep = self.metrics.registry().spawn_upkeep(shutdown.clone());
        let endpoint = endpoint.map(|listener| {
            let probe = GatewayProbe {
                metrics: self.metrics.clone(),
                pool: self.pool.clone(),
                readiness: self.readiness.clone(),
                ingest: self.ingest.clone(),
                budget: self.budget.clone(),
                totals: self.totals.clone(),
                notary: self.notary.clone(),
            };
            tokio::spawn(entropy_ops::endpoint::serve(listener, Arc::new(probe), shutdown.clone()))
        });
        Upkeep { tasks: [watcher, closer, upkeep], endpoint }
    }
}

/// Which HTTP/1.1 requests the public listener admits besides HTTP/2 (over TLS, by ALPN), for
/// the protocols whose clients speak HTTP/1.1 there: POST for gRPC-Web over plaintext (a
/// browser speaks HTTP/2 only over TLS, and negotiates it there) and for Connect (curl and
/// HTTP libraries speak HTTP/1.1 by default); GET for the REST routes over plaintext (the
/// original's clients; over TLS they negotiate HTTP/2).
pub(crate) fn public_http1(config: &GatewayConfig, tls: bool) -> Http1 {
    Http1 {
        post: (config.grpc_web_enabled && !tls) || config.connect_enabled,
        get: config.rest_enabled && !tls,
    }
}

/// EntropyService as the public listener serves it: native gRPC, and the translations in front
/// of it (Connect outermost, on or off: what it passes on is gRPC).
fn entropy_routes<S, B>(api: S, web: Option<&GrpcWeb>, connect: Connect) -> Routes
where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<B>,
            Error = std::convert::Infallible,
        > + tonic::server::NamedService
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = tonic::codegen::Bytes> + Send + 'static,
    B::Error: Into<tonic::codegen::StdError> + std::fmt::Display,
{
    match web {
        None => Routes::new(connect.wrap(api)),
        Some(web) => Routes::new(connect.wrap(web.wrap(api))),
    }
}

/// The proto file of the ingest contract, which the public listener does not describe.
const INGEST_PROTO: &str = "entropy/v1/ingest.proto";

/// Reflection for the public listener. It describes only what that listener serves: the
/// descriptors also hold IngestService (same package), which lives on the ingest listener, so
/// its file is left out of what reflection can return, not only of the service list.
fn reflection() -> Result<tonic_reflection::server::Builder<'static>, ServeError> {
    Ok(tonic_reflection::server::Builder::configure()
        .register_file_descriptor_set(public_descriptors()?)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .with_service_name(PUBLIC_SERVICE)
        .with_service_name("entropy.v1.ReceiptLogService")
        .with_service_name("grpc.health.v1.Health")
        .with_service_name("grpc.reflection.v1.ServerReflection")
        .with_service_name("grpc.reflection.v1alpha.ServerReflection"))
}

/// The compiled descriptors without the ingest contract's file.
fn public_descriptors() -> Result<prost_types::FileDescriptorSet, ServeError> {
    use prost::Message as _;
    let mut set = prost_types::FileDescriptorSet::decode(entropy_proto::FILE_DESCRIPTOR_SET)
        .map_err(|e| ServeError::Descriptors(e.to_string()))?;
    set.file.retain(|file| file.name() != INGEST_PROTO);
    if let Some(file) = set.file.iter().find(|f| f.dependency.iter().any(|d| d == INGEST_PROTO)) {
        return Err(ServeError::Descriptors(format!(
            "{} imports {INGEST_PROTO}, which the public listener must not describe",
            file.name()
        )));
    }
    Ok(set)
}

/// The HTTP/2 settings both listeners share; windows and frame sizes are set per listener.
fn http2_settings(max_streams: u32) -> Http2Settings {
    Http2Settings {
        stream_window: PUBLIC_WINDOW,
        connection_window: PUBLIC_WINDOW,
        max_frame: PUBLIC_MAX_FRAME,
        // SETTINGS_MAX_CONCURRENT_STREAMS: compliant clients queue past it; a stream opened
        // anyway gets REFUSED_STREAM.
        max_streams,
        max_header_list: MAX_HEADER_LIST_BYTES,
        max_send_buffer: MAX_SEND_BUFFER_BYTES,
        keepalive_interval: Some(KEEPALIVE_INTERVAL),
        keepalive_timeout: KEEPALIVE_TIMEOUT,
    }
}
