//! The Rust entry of the cross-language conformance run (clients/conformance/README.md):
//! runs each case through this library and prints one JSON line per case.
//!
//! `conformance --endpoint HOST:PORT --stall-endpoint HOST:PORT`, key in ENTROPY_API_KEY; and
//! the `reader` and `throughput` modes of clients/README.md ("Reader programs").

use std::time::{Duration, Instant};

use base64::Engine as _;
use entropy_diode_client::{Client, ClientBuilder, Error, StreamOptions};
use entropy_proto::v1::StreamRandomRequest;
use entropy_proto::v1::entropy_service_client::EntropyServiceClient;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn code(e: &Error) -> &'static str {
    match e {
        Error::InvalidArgument(_) => "INVALID_ARGUMENT",
        Error::Unauthenticated(_) => "UNAUTHENTICATED",
        Error::PermissionDenied(_) => "PERMISSION_DENIED",
        Error::QuotaExhausted(_) => "RESOURCE_EXHAUSTED",
        Error::Unavailable(_) => "UNAVAILABLE",
        Error::DeadlineExceeded(_) => "DEADLINE_EXCEEDED",
        Error::FailedPrecondition(_) => "FAILED_PRECONDITION",
        Error::Config(_) => "CLIENT_ERROR",
        Error::Other { code, .. } => match code {
            tonic::Code::Cancelled => "CANCELLED",
            tonic::Code::Internal => "INTERNAL",
            _ => "UNKNOWN",
        },
    }
}

fn report(case: &str, result: Result<(&str, Value), Error>) {
    let line = match result {
        Ok((field, value)) => json!({ "case": case, "code": "OK", field: value }),
        Err(e) => json!({ "case": case, "code": code(&e), "error": e.to_string() }),
    };
    println!("{line}");
}

fn b64(bytes: &[u8]) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The library's error inside an I/O error from the stream reader.
fn stream_error(e: std::io::Error) -> Error {
    match e.into_inner().map(|inner| inner.downcast::<Error>()) {
        Some(Ok(err)) => *err,
        Some(Err(other)) => Error::Config(format!("stream failed: {other}")),
        None => Error::Config("stream failed".into()),
    }
}

type Args = Vec<String>;

fn arg(args: &Args, name: &str) -> String {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_default()
}

fn number(args: &Args, name: &str) -> Result<u64, Box<dyn std::error::Error>> {
    arg(args, name).parse().map_err(|e| format!("{name}: {e}").into())
}

/// `reader`: exactly --total bytes through the library's reader in reads of --chunk-bytes,
/// sleeping --pace-ms after each, every byte appended to --out as it arrives.
async fn reader(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let (total, chunk) = (number(args, "--total")?, number(args, "--chunk-bytes")?);
    let pace = Duration::from_millis(arg(args, "--pace-ms").parse().unwrap_or(0));
    let mut options = StreamOptions::default().chunk_bytes(u32::try_from(chunk)?);
    if let Ok(ms) = arg(args, "--budget-ms").parse() {
        options = options.reconnect_budget(Duration::from_millis(ms));
    }
    let client = ClientBuilder::from_env().endpoint(arg(args, "--endpoint")).connect().await?;
    let mut stream = client.stream_with(Some(total), options);
    let mut out = tokio::fs::File::create(arg(args, "--out")).await?;
    let mut buf = vec![0u8; usize::try_from(chunk)?];
    let (mut got, mut result) = (0u64, Ok(()));
    while got < total {
        match stream.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                out.write_all(&buf[..n]).await?;
                out.flush().await?;
                got += n as u64;
                tokio::time::sleep(pace).await;
            }
            Err(e) => {
                result = Err(stream_error(e));
                break;
            }
        }
    }
    let line = match result {
        Ok(()) => {
            json!({ "code": "OK", "bytes": got, "reconnects": stream.reconnects(), "error": "" })
        }
        Err(e) => json!({
            "code": code(&e), "bytes": got, "reconnects": stream.reconnects(), "error": e.to_string()
        }),
    };
    println!("{line}");
    Ok(())
}

/// `throughput`: --total bytes as fast as they come, through the reader or the raw stub.
async fn throughput(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let (total, chunk) = (number(args, "--total")?, number(args, "--chunk-bytes")?);
    let endpoint = arg(args, "--endpoint");
    let started = Instant::now();
    let mut got = 0u64;
    if arg(args, "--mode") == "stub" {
        let uri = entropy_diode_client::Endpoint::parse(&endpoint, false)?.uri();
        let mut stub = EntropyServiceClient::connect(uri).await?;
        let mut request = tonic::Request::new(StreamRandomRequest {
            chunk_bytes: u32::try_from(chunk)?,
            total_bytes: total,
            ..Default::default()
        });
        let key = std::env::var("ENTROPY_API_KEY").unwrap_or_default();
        request.metadata_mut().insert("authorization", format!("Bearer {key}").parse()?);
        let mut replies = stub.stream_random(request).await?.into_inner();
        while let Some(message) = replies.message().await? {
            got += message.data.len() as u64;
        }
    } else {
        let client = ClientBuilder::from_env().endpoint(endpoint).connect().await?;
        let mut stream = client.stream(Some(total), u32::try_from(chunk)?);
        let mut buf = vec![0u8; usize::try_from(chunk)?];
        loop {
            match stream.read(&mut buf).await.map_err(stream_error)? {
                0 => break,
                n => got += n as u64,
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!("{}", json!({ "bytes": got, "seconds": seconds }));
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Args = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("reader") => return reader(&args).await,
        Some("throughput") => return throughput(&args).await,
        _ => {}
    }
    let (endpoint, stall) = (arg(&args, "--endpoint"), arg(&args, "--stall-endpoint"));
    let key = std::env::var("ENTROPY_API_KEY").unwrap_or_default();
    let client = Client::connect(&endpoint, &key).await?;

    report("get_random_32", client.get_bytes(32).await.map(|b| ("data_b64", b64(&b))));
    report("num_bytes_zero", client.get_bytes(0).await.map(|b| ("data_b64", b64(&b))));
    report("num_bytes_too_big", client.get_bytes(1_048_577).await.map(|b| ("data_b64", b64(&b))));
    report(
        "integers_min_above_max",
        client.get_integers(5, 1, 1).await.map(|v| ("values", json!(v))),
    );
    report("dice", client.get_integers(1, 6, 1000).await.map(|v| ("values", json!(v))));
    report(
        "int64_full_range",
        client
            .get_integers(i64::MIN, i64::MAX, 100)
            .await
            .map(|v| ("values", json!(v.iter().map(i64::to_string).collect::<Vec<_>>()))),
    );
    report("floats", client.get_floats(1000).await.map(|v| ("values", json!(v))));
    report(
        "uuids",
        client
            .get_uuids(100)
            .await
            .map(|v| ("values", json!(v.iter().map(|u| u.to_string()).collect::<Vec<_>>()))),
    );
    let mut stream = client.stream(Some(1 << 20), 64 << 10);
    let mut data = Vec::new();
    let streamed = match stream.read_to_end(&mut data).await {
        Ok(_) => Ok(("data_b64", b64(&data))),
        Err(e) => Err(stream_error(e)),
    };
    report("stream_1mib", streamed);
    let wrong = Client::connect(&endpoint, &format!("wrong-{key}")).await?;
    report("wrong_key", wrong.get_bytes(32).await.map(|b| ("data_b64", b64(&b))));
    report(
        "status",
        client
            .status()
            .await
            .map(|s| ("pool_capacity_bytes", Value::String(s.pool_capacity_bytes.to_string()))),
    );
    let stalled =
        ClientBuilder::new(stall, key).timeout(Duration::from_millis(300)).connect().await?;
    report("deadline", stalled.get_bytes(32).await.map(|b| ("data_b64", b64(&b))));
    Ok(())
}
