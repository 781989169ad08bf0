//! Stream 10 MiB into random.bin: `cargo run -p entropy-client --example stream_to_file`.
mod common;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut stream = common::client().await?.stream(Some(10 << 20), 64 << 10);
    let mut file = tokio::fs::File::create("random.bin").await?;
    let written = tokio::io::copy(&mut stream, &mut file).await?;
    println!("wrote {written} bytes ({} reconnects)", stream.reconnects());
    Ok(())
}
