//! Three random (version 4) UUIDs.
mod common;

#[tokio::main]
async fn main() -> Result<(), entropy_diode_client::Error> {
    for uuid in common::client().await?.get_uuids(3).await? {
        println!("{uuid}");
    }
    Ok(())
}
