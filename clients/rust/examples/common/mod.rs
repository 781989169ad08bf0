//! Shared by the examples: connect using ENTROPY_ENDPOINT, ENTROPY_API_KEY and ENTROPY_CA_FILE.

/// A client for the gateway named by the environment (dev mode's address by default).
pub async fn client() -> Result<entropy_diode_client::Client, entropy_diode_client::Error> {
    entropy_diode_client::ClientBuilder::from_env().connect().await
}
