//! Seed a fast local PRNG from quantum entropy, for simulations that need many numbers.
use rand::RngExt;
mod common;

#[tokio::main]
async fn main() -> Result<(), entropy_diode_client::Error> {
    let mut rng: rand::rngs::StdRng = common::client().await?.seed().await?;
    let sample: Vec<f64> = (0..5).map(|_| rng.random::<f64>()).collect();
    println!("{sample:?}");
    Ok(())
}
