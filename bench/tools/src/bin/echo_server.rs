//! `echo-server`: the transport ceiling. It serves the gateway's own services (same proto, same
//! tonic, same HTTP/2 windows and TCP_NODELAY) but does no work: GetRandom answers `num_bytes`
//! zero bytes, StreamRandom sends zero-filled messages, Publish decodes and drops the chunk.
//! Every gateway figure in the report is divided by this server's figure for the same load.
//!
//! Prints `public <addr>` and `ingest <addr>` on stdout once both listeners are bound.

use std::net::SocketAddr;

use clap::Parser;
use entropy_proto::v1::entropy_service_server::{EntropyService, EntropyServiceServer};
use entropy_proto::v1::ingest_service_server::{IngestService, IngestServiceServer};
use entropy_proto::v1::{
    CheckQualityRequest, CheckQualityResponse, GetFloatsRequest, GetFloatsResponse,
    GetIntegersRequest, GetIntegersResponse, GetRandomRequest, GetRandomResponse, GetStatusRequest,
    GetStatusResponse, GetUsageRequest, GetUsageResponse, GetUuidsRequest, GetUuidsResponse,
    PublishRequest, PublishResponse, StreamRandomRequest, StreamRandomResponse,
};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

/// Trivial gRPC server with the gateway's services and transport settings.
#[derive(Debug, Parser)]
struct Cli {
    /// Public listener (EntropyService and reflection).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Ingest listener (IngestService).
    #[arg(long, default_value = "127.0.0.1:0")]
    ingest_listen: SocketAddr,
}

const MAX_BYTES: u32 = 1 << 20;
const DEFAULT_CHUNK: u32 = 16 << 10;

struct Echo;

#[tonic::async_trait]
impl EntropyService for Echo {
    async fn get_random(
        &self,
        request: Request<GetRandomRequest>,
    ) -> Result<Response<GetRandomResponse>, Status> {
        let n = request.into_inner().num_bytes.min(MAX_BYTES) as usize;
        // A fresh buffer per call, as the gateway allocates one per draw.
        Ok(Response::new(GetRandomResponse {
            data: vec![0; n],
            text: String::new(),
            ..Default::default()
        }))
    }

    type StreamRandomStream = ReceiverStream<Result<StreamRandomResponse, Status>>;

    async fn stream_random(
        &self,
        request: Request<StreamRandomRequest>,
    ) -> Result<Response<Self::StreamRandomStream>, Status> {
        let req = request.into_inner();
        let chunk = match req.chunk_bytes {
            0 => DEFAULT_CHUNK,
            n => n.min(MAX_BYTES),
        } as u64;
        let total = req.total_bytes;
        // The gateway's shape: a producer task feeding a small bounded channel.
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(async move {
            let mut sent = 0u64;
            while total == 0 || sent < total {
                let n = if total == 0 { chunk } else { chunk.min(total - sent) };
                let msg = StreamRandomResponse { data: vec![0; n as usize], ..Default::default() };
                if tx.send(Ok(msg)).await.is_err() {
                    break; // the client left
                }
                sent += n;
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn get_integers(
        &self,
        _: Request<GetIntegersRequest>,
    ) -> Result<Response<GetIntegersResponse>, Status> {
        Err(Status::unimplemented("echo-server serves GetRandom and StreamRandom only"))
    }

    async fn get_floats(
        &self,
        _: Request<GetFloatsRequest>,
    ) -> Result<Response<GetFloatsResponse>, Status> {
        Err(Status::unimplemented("echo-server serves GetRandom and StreamRandom only"))
    }

    async fn get_uuids(
        &self,
        _: Request<GetUuidsRequest>,
    ) -> Result<Response<GetUuidsResponse>, Status> {
        Err(Status::unimplemented("echo-server serves GetRandom and StreamRandom only"))
    }

    async fn get_status(
        &self,
        _: Request<GetStatusRequest>,
    ) -> Result<Response<GetStatusResponse>, Status> {
        Ok(Response::new(GetStatusResponse::default()))
    }

    async fn check_quality(
        &self,
        _: Request<CheckQualityRequest>,
    ) -> Result<Response<CheckQualityResponse>, Status> {
        Err(Status::unimplemented("echo-server serves GetRandom and StreamRandom only"))
    }

    async fn get_usage(
        &self,
        _: Request<GetUsageRequest>,
    ) -> Result<Response<GetUsageResponse>, Status> {
        Err(Status::unimplemented("echo-server serves GetRandom and StreamRandom only"))
    }
}

#[tonic::async_trait]
impl IngestService for Echo {
    async fn publish(
        &self,
        request: Request<PublishRequest>,
    ) -> Result<Response<PublishResponse>, Status> {
        drop(request.into_inner());
        Ok(Response::new(PublishResponse {}))
    }
}

fn server(stream_window: u32, connection_window: u32) -> Server {
    // The gateway's settings (server/src/process/server.rs), so only the work differs.
    Server::builder()
        .max_concurrent_streams(256)
        .initial_stream_window_size(stream_window)
        .initial_connection_window_size(connection_window)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let public = TcpListener::bind(cli.listen).await?;
    let ingest = TcpListener::bind(cli.ingest_listen).await?;
    println!("public {}", public.local_addr()?);
    println!("ingest {}", ingest.local_addr()?);
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(entropy_proto::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(entropy_proto::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    let public_server = server(1 << 20, 4 << 20)
        .add_service(EntropyServiceServer::new(Echo).max_encoding_message_size(4 << 20))
        .add_service(reflection)
        .add_service(reflection_alpha)
        .serve_with_incoming(TcpIncoming::from(public).with_nodelay(Some(true)));
    let ingest_server = server(4 << 20, 16 << 20)
        .add_service(IngestServiceServer::new(Echo).max_decoding_message_size(2 << 20))
        .serve_with_incoming(TcpIncoming::from(ingest).with_nodelay(Some(true)));
    let (a, b) = tokio::join!(public_server, ingest_server);
    a?;
    b?;
    Ok(())
}
