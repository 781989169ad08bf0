//! A fake gateway for the feeder's tests: a real tonic server with the gateway's
//! EntropyService, whose StreamRandom follows a script per stream (good bytes forever, or good
//! bytes then a failure the health tests must catch), recording every byte it sends.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use entropy_proto::v1::entropy_service_server::{EntropyService, EntropyServiceServer};
use entropy_proto::v1::{
    CheckQualityRequest, CheckQualityResponse, GetFloatsRequest, GetFloatsResponse,
    GetIntegersRequest, GetIntegersResponse, GetRandomRequest, GetRandomResponse, GetStatusRequest,
    GetStatusResponse, GetUsageRequest, GetUsageResponse, GetUuidsRequest, GetUuidsResponse,
    StreamRandomRequest, StreamRandomResponse,
};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

/// What one stream sends.
#[derive(Debug, Clone, Copy)]
pub enum Script {
    /// Pseudo-random bytes forever.
    Good,
    /// `good` pseudo-random bytes, then the same byte forever (repetition count fails).
    ThenConstant { good: usize },
    /// `good` pseudo-random bytes, then their last 4096 bytes replayed forever (block
    /// repetition fails).
    ThenReplay { good: usize },
}

/// Bytes that pass the health tests: splitmix64, a seed per stream.
pub struct Good(u64);

impl Good {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x1234_5678)
    }

    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
    }
}

#[derive(Clone)]
struct Fake {
    scripts: Arc<Vec<Script>>,
    streams: Arc<AtomicUsize>,
    sent: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: CancellationToken,
}

/// A running fake gateway.
pub struct FakeGateway {
    pub addr: SocketAddr,
    fake: Fake,
    server: tokio::task::JoinHandle<()>,
}

impl FakeGateway {
    /// Serves on `addr` (port 0 for any); stream `i` follows `scripts[i]`, the last repeating.
    pub async fn start(addr: SocketAddr, scripts: Vec<Script>) -> Self {
        let fake = Fake {
            scripts: Arc::new(scripts),
            streams: Arc::default(),
            sent: Arc::default(),
            stop: CancellationToken::new(),
        };
        Self::serve(addr, fake).await
    }

    async fn serve(addr: SocketAddr, fake: Fake) -> Self {
        let listener = TcpListener::bind(addr).await.expect("bind the fake gateway");
        let addr = listener.local_addr().expect("local addr");
        let service = EntropyServiceServer::new(fake.clone());
        let stop = fake.stop.clone();
        let server = tokio::spawn(async move {
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(TcpListenerStream::new(listener), stop.cancelled())
                .await
                .expect("fake gateway serves");
        });
        Self { addr, fake, server }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Streams opened so far.
    pub fn streams(&self) -> usize {
        self.fake.streams.load(Ordering::SeqCst)
    }

    /// Every byte stream `i` sent.
    pub fn sent(&self, i: usize) -> Vec<u8> {
        self.fake.sent.lock().expect("sent").get(i).cloned().unwrap_or_default()
    }

    /// Stops serving (its streams end) and closes the port; returns the scripts and records
    /// for a restart on the same address.
    pub async fn stop(self) -> (SocketAddr, Fake2) {
        self.fake.stop.cancel();
        self.server.await.expect("fake gateway stops");
        (self.addr, Fake2(self.fake))
    }
}

/// A stopped fake gateway, to restart on the same port.
pub struct Fake2(Fake);

impl Fake2 {
    /// Every byte stream `i` sent.
    pub fn sent(&self, i: usize) -> Vec<u8> {
        self.0.sent.lock().expect("sent").get(i).cloned().unwrap_or_default()
    }

    pub async fn restart(self, addr: SocketAddr) -> FakeGateway {
        let fake = Fake { stop: CancellationToken::new(), ..self.0 };
        FakeGateway::serve(addr, fake).await
    }
}

#[tonic::async_trait]
impl EntropyService for Fake {
    type StreamRandomStream = ReceiverStream<Result<StreamRandomResponse, Status>>;

    async fn stream_random(
        &self,
        request: Request<StreamRandomRequest>,
    ) -> Result<Response<Self::StreamRandomStream>, Status> {
        let chunk = request.into_inner().chunk_bytes.max(1) as usize;
        let index = self.streams.fetch_add(1, Ordering::SeqCst);
        let script = self.scripts[index.min(self.scripts.len() - 1)];
        self.sent.lock().expect("sent").push(Vec::new());
        let (tx, rx) = mpsc::channel(4);
        let (sent, stop) = (self.sent.clone(), self.stop.clone());
        tokio::spawn(async move {
            let mut good = Good::new(index as u64 + 1);
            let mut total = 0usize;
            loop {
                let mut data = vec![0u8; chunk];
                let good_left = match script {
                    Script::Good => usize::MAX,
                    Script::ThenConstant { good } | Script::ThenReplay { good } => {
                        good.saturating_sub(total)
                    }
                };
                let n = good_left.min(chunk);
                good.fill(&mut data[..n]);
                if n < chunk {
                    match script {
                        Script::ThenConstant { .. } => data[n..].fill(0xa5),
                        Script::ThenReplay { good } => {
                            let all = sent.lock().expect("sent")[index].clone();
                            let block = &all[good - 4096..good];
                            for (i, b) in data[n..].iter_mut().enumerate() {
                                *b = block[(total + n + i - good) % 4096];
                            }
                        }
                        Script::Good => unreachable!(),
                    }
                }
                sent.lock().expect("sent")[index].extend_from_slice(&data);
                total += chunk;
                let msg = StreamRandomResponse { data, provenance: None };
                tokio::select! {
                    () = stop.cancelled() => break,
                    sent = tx.send(Ok(msg)) => if sent.is_err() { break },
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn get_random(
        &self,
        _: Request<GetRandomRequest>,
    ) -> Result<Response<GetRandomResponse>, Status> {
        Err(Status::unimplemented("fake gateway: StreamRandom only"))
    }

    async fn get_integers(
        &self,
        _: Request<GetIntegersRequest>,
    ) -> Result<Response<GetIntegersResponse>, Status> {
        Err(Status::unimplemented("fake gateway: StreamRandom only"))
    }

    async fn get_floats(
        &self,
        _: Request<GetFloatsRequest>,
    ) -> Result<Response<GetFloatsResponse>, Status> {
        Err(Status::unimplemented("fake gateway: StreamRandom only"))
    }

    async fn get_uuids(
        &self,
        _: Request<GetUuidsRequest>,
    ) -> Result<Response<GetUuidsResponse>, Status> {
        Err(Status::unimplemented("fake gateway: StreamRandom only"))
    }

    async fn get_status(
        &self,
        _: Request<GetStatusRequest>,
    ) -> Result<Response<GetStatusResponse>, Status> {
        Err(Status::unimplemented("fake gateway: StreamRandom only"))
    }

    async fn check_quality(
        &self,
        _: Request<CheckQualityRequest>,
    ) -> Result<Response<CheckQualityResponse>, Status> {
        Err(Status::unimplemented("fake gateway: StreamRandom only"))
    }

    async fn get_usage(
        &self,
        _: Request<GetUsageRequest>,
    ) -> Result<Response<GetUsageResponse>, Status> {
        Err(Status::unimplemented("fake gateway: StreamRandom only"))
    }
}

/// The value of the series `name_and_labels` (as rendered, `name{k="v"}`) in `text`.
pub fn metric(text: &str, name_and_labels: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name_and_labels)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name_and_labels} not in\n{text}"))
}
