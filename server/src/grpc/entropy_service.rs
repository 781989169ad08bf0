//! EntropyService: bytes, a stream, integers, floats, UUIDs and status, drawn from the pool;
//! a quality check; and the calling key's usage of its limits.

use std::sync::Arc;
use std::time::Duration;

use entropy_proto::v1::entropy_service_server::EntropyService;
use entropy_proto::v1::{
    CheckQualityRequest, CheckQualityResponse, DrawReceipt, Encoding, GetFloatsRequest,
    GetFloatsResponse, GetIntegersRequest, GetIntegersResponse, GetRandomRequest,
    GetRandomResponse, GetStatusRequest, GetStatusResponse, GetUsageRequest, GetUsageResponse,
    GetUuidsRequest, GetUuidsResponse, SourceStatus, StreamRandomRequest,
};
use entropy_receipts::{Rpc, ServedValues};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status};

use super::deadline::{self, Limit};
use super::delivery::{
    self, DrbgSource, Generated, Refused, Source, StreamDrbg, Undelivered, wire_bound,
};
use super::errors::{self, take_failed};
use super::observe::{Call, Caller, Failure, Reply};
use super::provenance;
use super::quality;
use super::receipts::{self as receipt, RECEIPT_WIRE_BYTES};
use super::requests::{Count, Integers, QualitySample, RandomBytes};
use super::stream_random::{Outbox, Producer, ShutdownCuts, StreamPlan};
use super::usage;
use crate::domain::allowance::Account;
use crate::domain::auth::{KeyGrant, Scope};
use crate::domain::drbg::{Construction, Reseeding};
use crate::domain::ingest::Ingest;
use crate::domain::pool::{Drawn, Kinds, Pool, Segment, TakeError, Tenant};
use crate::domain::readiness::Readiness;
use crate::domain::receipts::Notary;
use crate::domain::sampling::{FLOAT_BYTES, UUID_BYTES, float_from, uuid_v4_from};
use crate::domain::served::Totals;
use crate::metrics::{GatewayMetrics, Method};
use crate::transport::ConnectionInfo;

/// Most bytes one integer takes on the wire (a negative int64 as a varint).
const INTEGER_WIRE_BYTES: usize = 10;
/// Bytes one UUID takes on the wire (its 36 characters, a tag and a length).
const UUID_WIRE_BYTES: usize = 38;

/// How long a stream waits for entropy for one message before it ends with UNAVAILABLE,
/// unless configured (`stream_max_wait_ms`).
pub(crate) const DEFAULT_STREAM_MAX_WAIT: Duration = Duration::from_secs(30);
/// The EntropyService implementation.
#[derive(Debug, Clone)]
pub struct EntropyApi {
    pool: Arc<Pool>,
    ingest: Arc<Ingest>,
    readiness: Arc<Readiness>,
    max_wait: Duration,
    stream_max_wait: Duration,
    shutdown: CancellationToken,
    streams: TaskTracker,
    cuts: ShutdownCuts,
    started: Instant,
    metrics: Arc<GatewayMetrics>,
    /// The process's allowance for response bytes.
    responses: Account,
    /// Served and discarded bytes.
    totals: Arc<Totals>,
    /// One CheckQuality at a time.
    quality_turns: Arc<tokio::sync::Semaphore>,
    /// When DRBG instances reseed.
    reseeding: Reseeding,
    /// The receipt notary (`receipts_dir`), if the gateway keeps a receipt log.
    notary: Option<Arc<Notary>>,
}

impl EntropyApi {
    /// A service drawing from `pool`; streams stop when `shutdown` fires and are tracked in
    /// `streams` so shutdown can wait for them.
    pub fn new(
        pool: Arc<Pool>,
        ingest: Arc<Ingest>,
        readiness: Arc<Readiness>,
        max_wait: Duration,
        shutdown: CancellationToken,
        streams: TaskTracker,
    ) -> Self {
        Self {
            pool,
            ingest,
            readiness,
            max_wait,
            stream_max_wait: DEFAULT_STREAM_MAX_WAIT,
            shutdown,
            streams,
            cuts: ShutdownCuts::default(),
            started: Instant::now(),
            metrics: Arc::default(),
            responses: Account::new("max_buffered_bytes", usize::MAX),
            totals: Arc::default(),
            quality_turns: Arc::new(tokio::sync::Semaphore::new(1)),
            reseeding: Reseeding::default(),
            notary: None,
        }
    }

    /// Issues receipts with `notary` (by default, none: calls asking for one are refused).
    pub(crate) fn with_notary(mut self, notary: Option<Arc<Notary>>) -> Self {
        self.notary = notary;
        self
    }

    /// Reseeds DRBG instances as `reseeding` says (default [`Reseeding::default`]).
    pub(crate) fn with_drbg_reseeding(mut self, reseeding: Reseeding) -> Self {
        self.reseeding = reseeding;
        self
    }

    /// Holds response bytes on `responses`, the process's allowance (by default, none).
    pub(crate) fn with_responses(mut self, responses: Account) -> Self {
        self.responses = responses;
        self
    }

    /// Counts served, discarded and tested bytes in `totals`.
    pub(crate) fn with_totals(mut self, totals: Arc<Totals>) -> Self {
        self.totals = totals;
        self
    }

    /// Counts the streams the shutdown cuts in `cuts` (see [`ShutdownCuts`]).
    pub(crate) fn with_shutdown_cuts(mut self, cuts: ShutdownCuts) -> Self {
        self.cuts = cuts;
        self
    }

    /// Ends a stream when its next message cannot be drawn within `max_wait` (default
    /// [`DEFAULT_STREAM_MAX_WAIT`]).
    pub(crate) fn with_stream_max_wait(mut self, max_wait: Duration) -> Self {
        self.stream_max_wait = max_wait;
        self
    }

    /// Counts calls into `metrics` (by default, a registry of its own that nobody reads).
    pub(crate) fn with_metrics(mut self, metrics: Arc<GatewayMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Draws exactly `n` bytes of the `accept`ed kinds for `caller` within its key's byte
    /// quota, the client's deadline and the server's max wait, holding room for a response of
    /// at most `wire` bytes until it is delivered ([`delivery::draw`]).
    ///
    /// With `drbg`, the bytes are that instance's output instead, seeded from the pool
    /// ([`delivery::draw_drbg`]).
    async fn draw(
        &self,
        caller: &Caller,
        (metadata, extensions): (&MetadataMap, &tonic::Extensions),
        (n, wire, accept): (usize, usize, Kinds),
        drbg: Option<&mut DrbgSource>,
    ) -> Result<(Output, Undelivered), Failure> {
        let (until, limit) = self.until(metadata, n)?;
        let from = self.source(extensions, &caller.grant);
        let settle = (caller.meter.clone(), self.totals.clone());
        let drawn = match drbg {
            None => delivery::draw(&from, (n, wire, accept), until, settle)
                .await
                .map(|(drawn, owed)| (Output::Pool(drawn), owed)),
            Some(drbg) => delivery::draw_drbg(&from, drbg, (n, wire, accept), until, settle)
                .await
                .map(|(generated, owed)| (Output::Drbg(generated), owed)),
        };
        drawn.map_err(|refused| Self::refused(refused, limit, n))
    }

    /// The DRBG a call of `caller` asking for `construction` draws from: none for RAW; for a
    /// DRBG construction, a fresh instance (instantiated at its first draw), if the key holds
    /// `entropy:drbg`.
    fn drbg_for(
        &self,
        caller: &Caller,
        construction: Construction,
    ) -> Result<Option<DrbgSource>, Failure> {
        match construction {
            Construction::Raw => Ok(None),
            Construction::Drbg { .. } if !caller.grant.allows(Scope::EntropyDrbg) => {
                Err(Failure::Denied(Scope::EntropyDrbg))
            }
            Construction::Drbg { prediction_resistance } => {
                Ok(Some(DrbgSource::new(prediction_resistance, self.reseeding)))
            }
        }
    }

    /// When a draw of `n` bytes must have its bytes by, and which limit that is: the client's
    /// deadline or the server's max wait. A client deadline already spent (`grpc-timeout: 1n`)
    /// draws nothing, not even when the bytes are there.
    fn until(&self, metadata: &MetadataMap, n: usize) -> Result<(Instant, Limit), Status> {
        let now = Instant::now();
        let (until, limit) =
            deadline::wait_until(deadline::client_deadline(metadata, now), self.max_wait, now);
        if limit == Limit::Client && until <= now {
            return Err(take_failed(TakeError::TimedOut, limit, n));
        }
        Ok((until, limit))
    }

    /// What a call of `grant` over the connection in `extensions` draws from.
    fn source<'a>(&'a self, extensions: &'a tonic::Extensions, grant: &'a KeyGrant) -> Source<'a> {
        Source {
            pool: &self.pool,
            quota: &grant.quota,
            tenant: Tenant::named(&grant.name),
            connection: ConnectionInfo::of(extensions),
            responses: &self.responses,
        }
    }

    /// Why a draw of `n` bytes that ended at `limit` took nothing.
    fn refused(refused: Refused, limit: Limit, n: usize) -> Failure {
        match refused {
            Refused::Quota(e) => Failure::Quota(e),
            Refused::Full(full) => Failure::Status(full.into()),
            Refused::Take(e) => Failure::Status(take_failed(e, limit, n)),
        }
    }
}

/// A unary call's bytes: pool bytes, or its DRBG's output.
#[derive(Debug)]
enum Output {
    Pool(Drawn),
    Drbg(Generated),
}

impl Output {
    /// Where the bytes came from, as of `now`.
    fn provenance(&self, now: Instant) -> Option<entropy_proto::v1::DrawProvenance> {
        match self {
            Self::Pool(drawn) => provenance::of_segments(drawn.segments(), now),
            Self::Drbg(generated) => Some(provenance::of_drbg(&generated.label, &generated.seeds)),
        }
    }

    /// Where the bytes of several draws of one response came from: every pool draw's chunks,
    /// or the DRBG's label as of the first draw and its seeds as of the last.
    fn provenance_of(rounds: &[Self], now: Instant) -> Option<entropy_proto::v1::DrawProvenance> {
        match (rounds.first(), rounds.last()) {
            (Some(Self::Drbg(first)), Some(Self::Drbg(last))) => {
                Some(provenance::of_drbg(&first.label, &last.seeds))
            }
            _ => {
                let segments: Vec<Segment> = rounds
                    .iter()
                    .filter_map(|round| match round {
                        Self::Pool(drawn) => Some(drawn.segments().iter().cloned()),
                        Self::Drbg(_) => None,
                    })
                    .flatten()
                    .collect();
                provenance::of_segments(&segments, now)
            }
        }
    }

    /// The bytes, no longer wiped: for the response.
    fn into_vec(self) -> Vec<u8> {
        match self {
            Self::Pool(drawn) => drawn.into_vec(),
            Self::Drbg(generated) => generated.bytes.into_vec(),
        }
    }
}

impl std::ops::Deref for Output {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Pool(drawn) => drawn,
            Self::Drbg(generated) => &generated.bytes,
        }
    }
}

#[tonic::async_trait]
impl EntropyService for EntropyApi {
    async fn get_random(
        &self,
        request: Request<GetRandomRequest>,
    ) -> Result<Response<GetRandomResponse>, Status> {
        Call::run(&self.metrics, (Method::GetRandom, Scope::EntropyRead), request, async |c, r| {
            self.get_random(c, r).await
        })
        .await
    }

    type StreamRandomStream = Outbox;

    async fn stream_random(
        &self,
        request: Request<StreamRandomRequest>,
    ) -> Result<Response<Self::StreamRandomStream>, Status> {
        let mut call = Call::start(&self.metrics, Method::StreamRandom);
        match self.stream_random(&mut call, request) {
            // The stream's task ends the call when the stream ends.
            Ok(stream) => Ok(stream),
            Err(status) => {
                call.end(status.code(), status.message());
                Err(status)
            }
        }
    }

    async fn get_integers(
        &self,
        request: Request<GetIntegersRequest>,
    ) -> Result<Response<GetIntegersResponse>, Status> {
        Call::run(
            &self.metrics,
            (Method::GetIntegers, Scope::EntropyRead),
            request,
            async |c, r| self.get_integers(c, r).await,
        )
        .await
    }

    async fn get_floats(
        &self,
        request: Request<GetFloatsRequest>,
    ) -> Result<Response<GetFloatsResponse>, Status> {
        Call::run(&self.metrics, (Method::GetFloats, Scope::EntropyRead), request, async |c, r| {
            self.get_floats(c, r).await
        })
        .await
    }

    async fn get_uuids(
        &self,
        request: Request<GetUuidsRequest>,
    ) -> Result<Response<GetUuidsResponse>, Status> {
        Call::run(&self.metrics, (Method::GetUuids, Scope::EntropyRead), request, async |c, r| {
            self.get_uuids(c, r).await
        })
        .await
    }

    async fn get_status(
        &self,
        request: Request<GetStatusRequest>,
    ) -> Result<Response<GetStatusResponse>, Status> {
        Call::run(&self.metrics, (Method::GetStatus, Scope::StatusRead), request, async |c, r| {
            self.get_status(c, &r)
        })
        .await
    }

    async fn check_quality(
        &self,
        request: Request<CheckQualityRequest>,
    ) -> Result<Response<CheckQualityResponse>, Status> {
        Call::run(
            &self.metrics,
            (Method::CheckQuality, Scope::QualityCheck),
            request,
            async |c, r| self.check_quality(c, r).await,
        )
        .await
    }

    /// Any valid key, about itself only, at no cost to its quota ([`Call::run_for_key`]).
    async fn get_usage(
        &self,
        request: Request<GetUsageRequest>,
    ) -> Result<Response<GetUsageResponse>, Status> {
        Call::run_for_key(&self.metrics, Method::GetUsage, request, async |caller, _| {
            Ok(Reply::new(usage::of(&caller.grant)))
        })
        .await
    }
}

/// The handlers' bodies; the trait methods above run each in a [`Call`] ([`Call::run`]).
impl EntropyApi {
    async fn get_random(
        &self,
        caller: Caller,
        request: Request<GetRandomRequest>,
    ) -> Result<Reply<GetRandomResponse>, Failure> {
        let (metadata, extensions, req) = request.into_parts();
        let (asked, accept_kinds) = (req.receipt, req.accept_kinds.clone());
        let RandomBytes { n, encoding, accept, construction } = req.try_into()?;
        let mut drbg = self.drbg_for(&caller, construction)?;
        let rpc = Rpc::GetRandom { num_bytes: n as u32 };
        let plan = receipt::plan(self.notary.as_ref(), &caller.grant, asked, (rpc, &accept_kinds))?;
        let payload = match encoding {
            Encoding::Unspecified => n,
            Encoding::Hex => 2 * n,
            Encoding::Base64 => n.div_ceil(3) * 4,
        };
        let wire = wire_bound(payload) + receipt_room(plan.as_ref());
        let (drawn, owed) =
            self.draw(&caller, (&metadata, &extensions), (n, wire, accept), drbg.as_mut()).await?;
        let provenance = drawn.provenance(Instant::now());
        let (drawn, receipt) =
            with_receipt(plan, provenance.as_ref(), drawn, |d| ServedValues::Bytes(d)).await?;
        let (data, text) = match encoding {
            Encoding::Unspecified => (drawn.into_vec(), String::new()),
            Encoding::Hex => (Vec::new(), hex::encode(&*drawn)),
            Encoding::Base64 => {
                use base64::Engine as _;
                (Vec::new(), base64::engine::general_purpose::STANDARD.encode(&*drawn))
            }
        };
        Ok(Reply::drawn(GetRandomResponse { data, text, provenance, receipt }, owed))
    }

    fn stream_random(
        &self,
        call: &mut Call,
        request: Request<StreamRandomRequest>,
    ) -> Result<Response<Outbox>, Status> {
        let (metadata, extensions, req) = request.into_parts();
        // A host feeder's key (entropy:feed) may stream raw bytes, and nothing else.
        let grant = call.authorize(&extensions, &[Scope::EntropyRead, Scope::EntropyFeed])?;
        if req.receipt {
            return Err(call.refuse(Failure::Status(errors::invalid_request(
                "receipt: StreamRandom issues no receipts; ask GetRandom (or GetIntegers, \
                 GetFloats, GetUuids) for a receipted draw",
            ))));
        }
        if grant.allows(Scope::EntropyReceipts) {
            return Err(call.refuse(Failure::Status(Status::failed_precondition(format!(
                "key {:?} holds entropy:receipts (a receipt with every draw) and StreamRandom \
                 issues no receipts; draw with GetRandom; nothing drawn",
                grant.name
            )))));
        }
        let plan = StreamPlan::try_from(&req)?;
        let now = Instant::now();
        let client_deadline = deadline::client_deadline(&metadata, now);
        if client_deadline.is_some_and(|d| d <= now) {
            // A deadline already spent (`grpc-timeout: 0S`): nothing is drawn.
            return Err(take_failed(TakeError::TimedOut, Limit::Client, plan.chunk));
        }
        let drbg = match plan.construction {
            Construction::Raw => None,
            Construction::Drbg { .. } if !grant.allows(Scope::EntropyDrbg) => {
                return Err(call.refuse(Failure::Denied(Scope::EntropyDrbg)));
            }
            Construction::Drbg { prediction_resistance } => Some(Arc::new(StreamDrbg::new(
                DrbgSource::new(prediction_resistance, self.reseeding),
            ))),
        };
        let slot = grant.quota.open_stream().map_err(|e| call.refuse(Failure::Quota(e)))?;
        let open_gauge = self.metrics.stream_opened();
        let producer = Producer {
            plan,
            pool: self.pool.clone(),
            tenant: Tenant::named(&grant.name),
            quota: grant.quota.clone(),
            responses: self.responses.clone(),
            totals: self.totals.clone(),
            connection: ConnectionInfo::of(&extensions).cloned(),
            slot,
            max_wait: self.stream_max_wait,
            client_deadline,
            shutdown: self.shutdown.clone(),
            cuts: self.cuts.clone(),
            // The call is now the stream's: its task ends it with the stream's final code.
            call: std::mem::replace(call, Call::start(&self.metrics, Method::StreamRandom)),
            drbg,
        };
        let (stream, dues) = producer.start(|task| {
            self.streams.spawn(async move {
                let _open_gauge = open_gauge;
                task.await;
            });
        });
        let mut response = Response::new(stream);
        response.extensions_mut().insert(dues);
        Ok(response)
    }

    async fn get_integers(
        &self,
        caller: Caller,
        request: Request<GetIntegersRequest>,
    ) -> Result<Reply<GetIntegersResponse>, Failure> {
        let (metadata, extensions, req) = request.into_parts();
        let (asked, accept_kinds) = (req.receipt, req.accept_kinds.clone());
        let (min, max) = (req.min, req.max);
        let Integers { count, range, accept, construction } = req.try_into()?;
        let mut drbg = self.drbg_for(&caller, construction)?;
        let k = range.bytes_per_draw();
        let mut values = Vec::with_capacity(count);
        let rpc = Rpc::GetIntegers { min, max, count: count as u32 };
        if k == 0 {
            if asked || caller.grant.allows(Scope::EntropyReceipts) {
                // A receipt states a draw; there is none to state.
                return Err(errors::invalid_request(format!(
                    "receipt: min == max ({}) draws nothing, so there is no draw to receipt",
                    range.min()
                ))
                .into());
            }
            // One possible value: no entropy is drawn, so there is no provenance.
            values.resize(count, range.min());
            return Ok(Reply::new(GetIntegersResponse { values, provenance: None, receipt: None }));
        }
        let plan = receipt::plan(self.notary.as_ref(), &caller.grant, asked, (rpc, &accept_kinds))?;
        let room = receipt_room(plan.as_ref());
        // Rejected draws are replaced in further rounds. If a round cannot be served, every
        // byte drawn so far goes back to the pool: it never left the process, and the failed
        // call consumes nothing.
        let mut rounds: Vec<Output> = Vec::new();
        let mut owed: Option<Undelivered> = None;
        while values.len() < count {
            let left = count - values.len();
            let wire = wire_bound(left * INTEGER_WIRE_BYTES) + room;
            let want = (left * k, wire, accept);
            match self.draw(&caller, (&metadata, &extensions), want, drbg.as_mut()).await {
                Ok((bytes, round_owed)) => {
                    values.extend(
                        bytes
                            .chunks_exact(k)
                            .filter_map(|d| range.sample(d))
                            .take(count - values.len()),
                    );
                    rounds.push(bytes);
                    match &mut owed {
                        Some(owed) => owed.absorb(round_owed),
                        None => owed = Some(round_owed),
                    }
                }
                Err(failure) => {
                    for bytes in rounds {
                        if let Output::Pool(drawn) = bytes {
                            self.pool.give_back(drawn);
                        }
                    }
                    if let Some(owed) = owed {
                        owed.abandon();
                    }
                    return Err(failure);
                }
            }
        }
        let provenance = Output::provenance_of(&rounds, Instant::now());
        let (values, receipt) =
            with_receipt(plan, provenance.as_ref(), values, |v| ServedValues::Integers(v)).await?;
        drop(rounds);
        let response = GetIntegersResponse { values, provenance, receipt };
        // At least one round was drawn: one possible value returned above.
        Ok(match owed {
            Some(owed) => Reply::drawn(response, owed),
            None => Reply::new(response),
        })
    }

    async fn get_floats(
        &self,
        caller: Caller,
        request: Request<GetFloatsRequest>,
    ) -> Result<Reply<GetFloatsResponse>, Failure> {
        let (metadata, extensions, req) = request.into_parts();
        let (asked, accept_kinds) = (req.receipt, req.accept_kinds.clone());
        let Count { count, accept, construction } = req.try_into()?;
        let mut drbg = self.drbg_for(&caller, construction)?;
        let rpc = Rpc::GetFloats { count: count as u32 };
        let plan = receipt::plan(self.notary.as_ref(), &caller.grant, asked, (rpc, &accept_kinds))?;
        let n = count * FLOAT_BYTES;
        let want = (n, wire_bound(n) + receipt_room(plan.as_ref()), accept);
        let (bytes, owed) =
            self.draw(&caller, (&metadata, &extensions), want, drbg.as_mut()).await?;
        // `draw` returns exactly the bytes asked for, so there is no remainder.
        let (floats, _) = bytes.as_chunks::<FLOAT_BYTES>();
        let values: Vec<f64> = floats.iter().map(float_from).collect();
        let provenance = bytes.provenance(Instant::now());
        drop(bytes);
        let (values, receipt) =
            with_receipt(plan, provenance.as_ref(), values, |v| ServedValues::Floats(v)).await?;
        Ok(Reply::drawn(GetFloatsResponse { values, provenance, receipt }, owed))
    }

    async fn get_uuids(
        &self,
        caller: Caller,
        request: Request<GetUuidsRequest>,
    ) -> Result<Reply<GetUuidsResponse>, Failure> {
        let (metadata, extensions, req) = request.into_parts();
        let (asked, accept_kinds) = (req.receipt, req.accept_kinds.clone());
        let Count { count, accept, construction } = req.try_into()?;
        let mut drbg = self.drbg_for(&caller, construction)?;
        let rpc = Rpc::GetUuids { count: count as u32 };
        let plan = receipt::plan(self.notary.as_ref(), &caller.grant, asked, (rpc, &accept_kinds))?;
        let wire = wire_bound(count * UUID_WIRE_BYTES) + receipt_room(plan.as_ref());
        let n = count * UUID_BYTES;
        let (bytes, owed) =
            self.draw(&caller, (&metadata, &extensions), (n, wire, accept), drbg.as_mut()).await?;
        // `draw` returns exactly the bytes asked for, so there is no remainder.
        let (uuids, _) = bytes.as_chunks::<UUID_BYTES>();
        // The UUIDs' bytes as served (version and variant bits set): what a receipt commits to.
        let uuids: Vec<[u8; UUID_BYTES]> =
            uuids.iter().map(|u| uuid_v4_from(*u).into_bytes()).collect();
        let provenance = bytes.provenance(Instant::now());
        drop(bytes);
        let (uuids, receipt) =
            with_receipt(plan, provenance.as_ref(), uuids, |u| ServedValues::Uuids(u)).await?;
        let uuids = uuids.iter().map(|u| uuid::Uuid::from_bytes(*u).to_string()).collect();
        Ok(Reply::drawn(GetUuidsResponse { uuids, provenance, receipt }, owed))
    }

    /// Draws the sample like any call (fair share, byte quota, deadline), tests it off the
    /// async workers, and wipes it: its bytes never leave the gateway.
    async fn check_quality(
        &self,
        caller: Caller,
        request: Request<CheckQualityRequest>,
    ) -> Result<Reply<CheckQualityResponse>, Failure> {
        let (metadata, extensions, req) = request.into_parts();
        let QualitySample { n, accept, construction } = req.try_into()?;
        let mut drbg = self.drbg_for(&caller, construction)?;
        // One check at a time in the whole gateway, so checks take at most one core from the
        // other calls; the others wait their turn (holding nothing) within their deadline.
        let now = Instant::now();
        let (until, limit) =
            deadline::wait_until(deadline::client_deadline(&metadata, now), self.max_wait, now);
        let Ok(Ok(_turn)) =
            tokio::time::timeout_at(until, self.quality_turns.clone().acquire_owned()).await
        else {
            return Err(errors::quality_busy(limit).into());
        };
        // The sample is held (its key's allowance and the process's) while it is tested; it
        // never goes on the wire, so nothing of it is served.
        let (until, limit) = self.until(&metadata, n)?;
        let from = self.source(&extensions, &caller.grant);
        let taken = match drbg.as_mut() {
            None => delivery::take(&from, (n, n, accept), until)
                .await
                .map(|(drawn, held)| (Output::Pool(drawn), held)),
            Some(drbg) => delivery::take_drbg(&from, drbg, (n, n, accept), until, &self.totals)
                .await
                .map(|(generated, held)| (Output::Drbg(generated), held)),
        };
        let (sample, _held) = taken.map_err(|refused| Self::refused(refused, limit, n))?;
        let provenance = sample.provenance(Instant::now());
        let report = tokio::task::spawn_blocking(move || quality::check(&sample))
            .await
            .map_err(|e| errors::internal("CheckQuality", &e))??;
        // A DRBG sample is no pool bytes (its seeds are counted as seed bytes).
        if drbg.is_none() {
            self.totals.count_tested(n);
        }
        Ok(Reply::tested(CheckQualityResponse { provenance, ..report }, n))
    }

    fn get_status(
        &self,
        _caller: Caller,
        _request: &Request<GetStatusRequest>,
    ) -> Result<Reply<GetStatusResponse>, Failure> {
        let pool = self.pool.stats();
        let ingest = self.ingest.stats();
        let now = Instant::now();
        let now_unix_ms = entropy_ops::clock::unix_ms_now();
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let sources = self
            .ingest
            .sources()
            .into_iter()
            .map(|s| SourceStatus {
                collector_id: s.collector_id,
                name: s.name,
                kind: provenance::wire_kind(s.kind) as i32,
                health: provenance::wire_health(s.health) as i32,
                contributed_bytes_total: s.contributed_bytes,
                last_report_age_ms: ms(now.saturating_duration_since(s.last_report)),
                last_mixing: provenance::wire_mixing(s.last_mixing) as i32,
            })
            .collect();
        Ok(Reply::new(GetStatusResponse {
            pool_bytes: pool.level as u64,
            pool_capacity_bytes: pool.capacity as u64,
            pool_low_watermark_bytes: self.readiness.low_watermark() as u64,
            waiters: pool.waiters as u64,
            ingested_bytes_total: pool.ingested_total,
            served_bytes_total: self.totals.served(),
            chunks_accepted_total: ingest.chunks_accepted,
            chunks_rejected_total: ingest.chunks_rejected,
            uptime_ms: ms(now.saturating_duration_since(self.started)),
            last_chunk_age_ms: ingest
                .last_accept_unix_ms
                .map(|t| u64::try_from(now_unix_ms.saturating_sub(t)).unwrap_or(0)),
            sources,
            pool_by_class: provenance::class_levels(&self.pool.levels_by_class()),
            expired_bytes_total: pool.expired_total,
            evicted_bytes_total: pool.evicted_total,
            max_byte_age_ms: self.pool.limits().max_byte_age.map_or(0, ms),
            discarded_bytes_total: self.totals.discarded(),
            quality_tested_bytes_total: self.totals.quality_tested(),
            drbg_served_bytes_total: self.totals.drbg_served(),
            drbg_seed_bytes_total: self.totals.drbg_seeds(),
            serving: self.readiness.is_serving(),
            chunks_deferred_total: ingest.chunks_deferred,
            not_serving_reason: match self.readiness.explain() {
                Ok(()) if self.readiness.is_serving() => String::new(),
                // Ready now, not yet published on grpc.health (polled every 100 ms).
                Ok(()) => "not ready: readiness is being re-evaluated".into(),
                Err(unready) => unready.to_string(),
            },
        }))
    }
}

/// Wire room a response holds for its receipt: [`RECEIPT_WIRE_BYTES`] when it gets one.
fn receipt_room(plan: Option<&receipt::Plan>) -> usize {
    if plan.is_some() { RECEIPT_WIRE_BYTES } else { 0 }
}

/// The receipt of a draw of `values` when `plan` says it gets one ([`receipt::Plan::issue`]);
/// on failure the values are dropped (drawn bytes wiped) and the call answers the status.
async fn with_receipt<V: Send + 'static>(
    plan: Option<receipt::Plan>,
    provenance: Option<&entropy_proto::v1::DrawProvenance>,
    values: V,
    view: fn(&V) -> ServedValues<'_>,
) -> Result<(V, Option<DrawReceipt>), Failure> {
    match plan {
        None => Ok((values, None)),
        Some(plan) => {
            let (values, receipt) = plan.issue(provenance, values, view).await?;
            Ok((values, Some(receipt)))
        }
    }
}
