//! The Rust entry of the cross-language conformance run (clients/conformance/README.md):
//! runs each case through this library and prints one JSON line per case.
//!
//! `conformance --endpoint HOST:PORT --stall-endpoint HOST:PORT`, key in ENTROPY_API_KEY.

use std::time::Duration;

use base64::Engine as _;
use entropy_client::{Client, ClientBuilder, Error};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

fn code(e: &Error) -> &'static str {
    match e {
        Error::InvalidArgument(_) => "INVALID_ARGUMENT",
        Error::Unauthenticated(_) => "UNAUTHENTICATED",
        Error::PermissionDenied(_) => "PERMISSION_DENIED",
        Error::QuotaExhausted(_) => "RESOURCE_EXHAUSTED",
        Error::Unavailable(_) => "UNAVAILABLE",
        Error::DeadlineExceeded(_) => "DEADLINE_EXCEEDED",
        Error::Config(_) => "CLIENT_ERROR",
        Error::Other { code, .. } => match code {
            tonic::Code::Cancelled => "CANCELLED",
            tonic::Code::Internal => "INTERNAL",
            tonic::Code::FailedPrecondition => "FAILED_PRECONDITION",
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .unwrap_or_default()
    };
    let (endpoint, stall) =
        (format!("http://{}", arg("--endpoint")), format!("http://{}", arg("--stall-endpoint")));
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
        Err(e) => Err(match e.into_inner().map(|inner| inner.downcast::<Error>()) {
            Some(Ok(err)) => *err,
            _ => Error::Config("stream failed".into()),
        }),
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
