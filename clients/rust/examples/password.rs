//! A 20-character password from a 62-symbol alphabet (~119 bits), each symbol drawn unbiased.
mod common;

#[tokio::main]
async fn main() -> Result<(), entropy_diode_client::Error> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let picks = common::client().await?.get_integers(0, ALPHABET.len() as i64 - 1, 20).await?;
    let password: String = picks.iter().map(|&i| ALPHABET[i as usize] as char).collect();
    println!("{password}");
    Ok(())
}
