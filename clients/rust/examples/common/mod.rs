//! Shared by the examples: connect using ENTROPY_ENDPOINT and ENTROPY_API_KEY.

/// A client for the gateway named by the environment (dev mode's address by default).
pub async fn client() -> Result<entropy_client::Client, entropy_client::Error> {
    let endpoint =
        std::env::var("ENTROPY_ENDPOINT").unwrap_or_else(|_| "http://127.0.0.1:50051".into());
    let key = std::env::var("ENTROPY_API_KEY").unwrap_or_default();
    entropy_client::Client::connect(&endpoint, &key).await
}
