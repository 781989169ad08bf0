//! Roll ten fair dice: `cargo run -p entropy-client --example dice`.
mod common;

#[tokio::main]
async fn main() -> Result<(), entropy_diode_client::Error> {
    let rolls = common::client().await?.get_integers(1, 6, 10).await?;
    println!("{rolls:?}");
    Ok(())
}
