//! One HTTP/1.1 GET over a fresh connection, for tests of the metrics and probe endpoint. Kept
//! to the bytes on the wire on purpose: the endpoint is tested as a scraper or an attacker sees
//! it, not through an HTTP library that might paper over what it sends.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// GET `path` on `addr` (connection closed after): the status code and the body.
///
/// # Panics
/// When the connection fails or the answer is not an HTTP response: this is for tests.
#[allow(clippy::expect_used)]
pub async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP response");
    let code = head.split(' ').nth(1).and_then(|c| c.parse().ok()).expect("status code");
    (code, body.to_owned())
}
