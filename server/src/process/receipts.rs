//! The receipt notary as the process runs it: opened from the config (`receipts_*` keys) before
//! the gateway serves, and a task that signs a tree head every `receipts_head_interval_ms`
//! while the log grows, and a last one at shutdown.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::domain::receipts::{Notary, NotaryConfig, NotaryError};
use crate::process::config::GatewayConfig;

/// Opens the notary `config` names, or `None` when `receipts_dir` is unset.
pub fn open(config: &GatewayConfig) -> Result<Option<Arc<Notary>>, NotaryError> {
    let Some(dir) = config.receipts_dir.clone() else {
        return Ok(None);
    };
    let notary_config = NotaryConfig {
        key_file: config.receipts_key_file.clone().unwrap_or_else(|| dir.join("signing.key")),
        public_key_file: config
            .receipts_public_key_file
            .clone()
            .unwrap_or_else(|| dir.join("public.key")),
        sync: config.receipts_sync,
        gateway_id: config.gateway_id.clone(),
        dir,
    };
    let (notary, recovery) = Notary::open(&notary_config, entropy_ops::clock::unix_ms_now())?;
    tracing::info!(
        dir = %notary.dir().display(),
        receipts = recovery.receipts,
        cut_torn_tail_bytes = recovery.truncated_bytes,
        key_id = %notary.public_key().key_id().to_hex(),
        public_key_file = %notary_config.public_key_file.display(),
        "receipt log open"
    );
    Ok(Some(Arc::new(notary)))
}

/// Signs a head every `interval` while the log grows, and once more at `shutdown`.
pub(crate) fn spawn_head_signer(
    notary: Arc<Notary>,
    interval: Duration,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let last = tokio::select! {
                () = shutdown.cancelled() => true,
                _ = tick.tick() => false,
            };
            let n = notary.clone();
            let signed =
                tokio::task::spawn_blocking(move || n.sign_head(entropy_ops::clock::unix_ms_now()))
                    .await;
            match signed {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::error!(error = %e, "cannot sign a receipt log head"),
                Err(e) => tracing::error!(error = %e, "the head signer failed"),
            }
            if last {
                break;
            }
        }
    })
}
