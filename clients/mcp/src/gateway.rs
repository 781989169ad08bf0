//! The gateway as the tools see it: calls through `entropy-diode-client` (so every byte is drawn
//! once, with this server's key, quota and metrics), and refusals turned into messages an agent
//! can act on.
//!
//! The client connects lazily and reconnects by itself, so a gateway that is down only fails
//! the calls made while it is down; the first call after it is back works.

use std::time::Duration;

use entropy_diode_client::{Client, ClientBuilder, Construction, Error};

use crate::draw::{EntropyBuf, Indices};

/// Most gateway fetches one set of indices may take. Each fetch nearly always finishes the job
/// (see `Indices::bytes_wanted`); this bound only stops a broken gateway, say one sending
/// constant bytes that are always rejected, from keeping a call going forever.
const MAX_INDEX_FETCHES: usize = 16;

/// Largest single GetRandom request the gateway serves.
const MAX_GET_RANDOM_BYTES: usize = 1 << 20;

/// A failed tool call, as the agent will read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Stable machine-readable kind: `invalid_argument`, `quota_exhausted`, `unavailable`,
    /// `timeout`, `server_misconfigured` or `gateway_error`.
    pub kind: &'static str,
    /// What happened and what to do, in one or two sentences.
    pub message: String,
    /// When a retry can succeed, if the gateway said.
    pub retry_after_ms: Option<u64>,
}

impl Failure {
    /// A bad argument: `message` names it and its bound.
    pub fn argument(message: impl Into<String>) -> Self {
        Self { kind: "invalid_argument", message: message.into(), retry_after_ms: None }
    }

    fn new(kind: &'static str, message: String) -> Self {
        Self { kind, message, retry_after_ms: None }
    }
}

/// A connection to the gateway, shared by every session.
#[derive(Debug, Clone)]
pub struct Gateway {
    client: Client,
    timeout: Duration,
}

impl Gateway {
    /// A lazily connecting client of `endpoint` with `api_key`; each call is bounded by
    /// `timeout`.
    pub async fn connect(
        endpoint: &str,
        api_key: &str,
        ca_file: Option<&std::path::Path>,
        timeout: Duration,
    ) -> Result<Self, Error> {
        let mut builder = ClientBuilder::new(endpoint, api_key).timeout(timeout);
        if let Some(path) = ca_file {
            builder = builder.ca_file(path);
        }
        Ok(Self { client: builder.connect().await?, timeout })
    }

    /// Exactly `n` bytes.
    pub async fn bytes(&self, n: usize) -> Result<Vec<u8>, Failure> {
        let n =
            u32::try_from(n).map_err(|_| Failure::argument(format!("{n} bytes is too many")))?;
        self.client.get_bytes(n).await.map_err(|e| self.failure(e))
    }

    /// Exactly `n` bytes made by `construction`, with the gateway's label of them.
    pub async fn draw(
        &self,
        n: usize,
        construction: Construction,
    ) -> Result<entropy_diode_client::Draw, Failure> {
        let n =
            u32::try_from(n).map_err(|_| Failure::argument(format!("{n} bytes is too many")))?;
        let client = self.client.with_construction(construction);
        client.draw(n).await.map_err(|e| self.failure(e))
    }

    /// `count` uniform integers in `[min, max]`, drawn unbiased by the gateway.
    pub async fn integers(&self, min: i64, max: i64, count: u32) -> Result<Vec<i64>, Failure> {
        self.client.get_integers(min, max, count).await.map_err(|e| self.failure(e))
    }

    /// `count` uniform doubles in [0, 1) with 53 random bits each.
    pub async fn floats(&self, count: u32) -> Result<Vec<f64>, Failure> {
        self.client.get_floats(count).await.map_err(|e| self.failure(e))
    }

    /// `count` version 4 UUIDs.
    pub async fn uuids(&self, count: u32) -> Result<Vec<String>, Failure> {
        let uuids = self.client.get_uuids(count).await.map_err(|e| self.failure(e))?;
        Ok(uuids.iter().map(ToString::to_string).collect())
    }

    /// The gateway's status.
    pub async fn status(&self) -> Result<entropy_diode_client::Status, Failure> {
        self.client.status().await.map_err(|e| self.failure(e))
    }

    /// One uniform index below each of `bounds`, from gateway bytes (see `draw`), and how many
    /// bytes were drawn for them.
    pub async fn indices(&self, bounds: Vec<u64>) -> Result<(Vec<u64>, usize), Failure> {
        let mut indices = Indices::new(bounds);
        let mut drawn = 0;
        for _ in 0..MAX_INDEX_FETCHES {
            // Nothing wanted: only bounds of 1 remain, which need no bytes.
            let n = indices.bytes_wanted().min(MAX_GET_RANDOM_BYTES);
            let mut buf = EntropyBuf::new(if n == 0 { Vec::new() } else { self.bytes(n).await? });
            drawn += n;
            if indices.fill(&mut buf) {
                return Ok((indices.into_values(), drawn));
            }
        }
        Err(Failure::new(
            "gateway_error",
            format!(
                "the gateway's bytes were rejected far more often than random bytes ever are \
                 ({drawn} bytes drawn); the gateway may be faulty: tell its operator"
            ),
        ))
    }

    /// The agent-facing failure for a client error. Gateway messages name fields and bounds
    /// and never carry internal details, so they are passed on.
    fn failure(&self, e: Error) -> Failure {
        match e {
            Error::InvalidArgument(m) => {
                Failure::argument(format!("the gateway refused an argument: {m}"))
            }
            Error::Unauthenticated(_) => Failure::new(
                "server_misconfigured",
                "the gateway did not accept this MCP server's own API key: the MCP server is \
                 misconfigured (its ENTROPY_API_KEY or gateway_api_key_file), not your request. \
                 Retrying will not help; tell the operator of this MCP server."
                    .into(),
            ),
            Error::PermissionDenied(m) => Failure::new(
                "server_misconfigured",
                format!(
                    "the gateway says this MCP server's API key lacks a scope ({m}): the MCP \
                     server is misconfigured, not your request. Retrying will not help; tell \
                     its operator."
                ),
            ),
            Error::QuotaExhausted(m) => {
                let retry_after_ms = retry_after_ms(&m);
                let when =
                    retry_after_ms.map_or_else(|| "later".to_owned(), |ms| format!("in {ms} ms"));
                Failure {
                    kind: "quota_exhausted",
                    message: format!(
                        "this MCP server's quota at the gateway is used up ({m}); nothing was \
                         drawn. Retry {when}."
                    ),
                    retry_after_ms,
                }
            }
            Error::Unavailable(m) => Failure::new(
                "unavailable",
                format!(
                    "the gateway cannot serve this right now ({m}): it is unreachable, starting, \
                     or short of entropy. Nothing was consumed; try again in a few seconds."
                ),
            ),
            Error::DeadlineExceeded(_) => Failure::new(
                "timeout",
                format!(
                    "the gateway did not deliver within {} ms (not enough entropy yet, or a slow \
                     link). Nothing was consumed; try again in a few seconds.",
                    self.timeout.as_millis()
                ),
            ),
            Error::Config(m) => Failure::new(
                "server_misconfigured",
                format!("the MCP server's gateway settings are unusable ({m}); tell its operator"),
            ),
            other => Failure::new("gateway_error", format!("the gateway failed the call: {other}")),
        }
    }
}

/// The wait in a quota message: the gateway says "retry in N ms" (its `retry-after-ms` trailer
/// carries the same number, but `entropy-diode-client` passes on only the message).
fn retry_after_ms(message: &str) -> Option<u64> {
    let rest = &message[message.find("retry in ")? + "retry in ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if !rest[digits.len()..].starts_with(" ms") {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delay_is_read_from_the_quota_message() {
        assert_eq!(retry_after_ms("request rate limit of 1/s reached; retry in 734 ms"), Some(734));
        assert_eq!(
            retry_after_ms("byte rate limit of 10 B/s reached; retry in 1000 ms"),
            Some(1000)
        );
        assert_eq!(retry_after_ms("quota used up"), None);
        assert_eq!(retry_after_ms("retry in soon ms"), None);
        assert_eq!(retry_after_ms("retry in 5 s"), None);
    }
}
