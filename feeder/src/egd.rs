//! STUB (feeder-core branch only; drop at merge in favour of the EGD helper's egd.rs): the
//! contract's signature, so main.rs compiles and wires EGD as agreed. `serve` refuses to run.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;

use crate::entropy::Entropy;

/// Bounds of the EGD server (feeder-contract.md).
#[derive(Debug, Clone, Copy)]
pub struct EgdLimits {
    /// Most clients at once.
    pub max_clients: usize,
    /// A client idle this long is closed.
    pub idle_timeout: Duration,
}

/// STUB: returns `Unsupported` at once.
pub async fn serve<E: Entropy>(
    listener: UnixListener,
    entropy: Arc<E>,
    limits: EgdLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    drop((listener, entropy, limits, shutdown));
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "EGD is not built in yet (stub egd.rs on the feeder-core branch)",
    ))
}
