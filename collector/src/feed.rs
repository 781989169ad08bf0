//! The collector loop: read a chunk from the source, sign it, deliver it, repeat.
//!
//! This is the single-source pipeline (mixing `MIXING_NONE`) that dev mode runs in process.
//! A chunk is signed only after the previous one is settled, so at most one signed chunk is
//! ever pending and nothing signed is lost to a full gateway: it waits and is resent.

use entropy_proto::v1::{Mixing, SourceHealth, SourceReport};
use tokio_util::sync::CancellationToken;

use crate::publisher::{Delivery, Publisher};
use crate::signer::ChunkSigner;
use crate::source::Source;

/// What a feed did before it stopped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FeedStats {
    /// Chunks the gateway stored (including ones it reported as already stored).
    pub delivered: u64,
    /// Chunks the gateway refused for good.
    pub refused: u64,
}

/// Feeds `publisher` with `chunk_bytes` chunks from `source` until `shutdown`.
pub async fn run(
    mut source: Box<dyn Source>,
    mut signer: ChunkSigner,
    mut publisher: Publisher,
    chunk_bytes: usize,
    shutdown: CancellationToken,
) -> FeedStats {
    let mut stats = FeedStats::default();
    while !shutdown.is_cancelled() {
        let data = match source.read(chunk_bytes).await {
            Ok(data) => data,
            Err(e) => {
                tracing::warn!(source = source.name(), "read failed: {e}");
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(std::time::Duration::from_secs(1)) => continue,
                }
            }
        };
        let report = SourceReport {
            name: source.name().to_owned(),
            kind: source.kind() as i32,
            health: SourceHealth::Healthy as i32,
            contributed: true,
        };
        let chunk = signer.sign(data, Mixing::None, vec![report]);
        match publisher.deliver(&chunk, &shutdown).await {
            Delivery::Stored | Delivery::AlreadyStored => stats.delivered += 1,
            Delivery::Refused(status) => {
                stats.refused += 1;
                tracing::warn!(
                    sequence = chunk.sequence,
                    code = ?status.code(),
                    "gateway refused chunk: {}",
                    status.message()
                );
            }
            Delivery::Abandoned => break,
        }
    }
    stats
}
