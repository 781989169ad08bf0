//! Process signals as the libraries consume them: SIGTERM and SIGINT cancel a
//! `CancellationToken` (graceful shutdown), SIGHUP asks for a reload.

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Cancels `shutdown` on the first SIGTERM or SIGINT, logging which, with `doing` saying what
/// happens next ("shutting down", say). Spawns a task; call it inside the runtime.
pub fn cancel_on_terminate(shutdown: CancellationToken, doing: &'static str) {
    let (term, int) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()));
    tokio::spawn(async move {
        let (Ok(mut term), Ok(mut int)) = (term, int) else {
            tracing::error!("cannot install signal handlers; stop with SIGKILL");
            return;
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: {doing}"),
            _ = int.recv() => tracing::info!("SIGINT: {doing}"),
        }
        shutdown.cancel();
    });
}

/// SIGHUPs, one `recv` per signal received (several close together may arrive as one).
#[derive(Debug)]
pub struct Hangups(tokio::signal::unix::Signal);

impl Hangups {
    /// Starts listening for SIGHUP.
    pub fn listen() -> std::io::Result<Self> {
        signal(SignalKind::hangup()).map(Self)
    }

    /// Waits for the next SIGHUP, or returns `false` once `shutdown` is cancelled.
    pub async fn next(&mut self, shutdown: &CancellationToken) -> bool {
        tokio::select! {
            () = shutdown.cancelled() => false,
            received = self.0.recv() => received.is_some(),
        }
    }
}
