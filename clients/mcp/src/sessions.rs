//! A cap on open MCP sessions over HTTP: rmcp's in-memory session manager, refusing to create a
//! session past `max`.
//!
//! The HTTP layer checks [`CappedSessions::is_full`] first so a client gets a clear 503; the
//! check here (under a lock, so concurrent `initialize` requests cannot both take the last slot)
//! is what makes the cap hold. Sessions leave the count when closed or idle past the timeout.

use std::time::Duration;

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use tokio::sync::Mutex;

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// `max` sessions are open already.
    #[error("{0} MCP sessions are open, the most this server allows; retry later")]
    Full(usize),
    /// rmcp's session manager failed.
    #[error(transparent)]
    Inner(#[from] LocalSessionManagerError),
}

/// rmcp's [`LocalSessionManager`] with a cap on open sessions.
#[derive(Debug)]
pub struct CappedSessions {
    inner: LocalSessionManager,
    max: usize,
    creating: Mutex<()>,
}

impl CappedSessions {
    /// At most `max` sessions, each closed after `idle` without a request.
    pub fn new(max: usize, idle: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        let mut config = SessionConfig::default();
        config.keep_alive = Some(idle);
        inner.session_config = config;
        Self { inner, max, creating: Mutex::new(()) }
    }

    /// Sessions open now.
    pub async fn open(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    /// True when no further session can be created now.
    pub async fn is_full(&self) -> bool {
        self.open().await >= self.max
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), SessionError> {
        let _one_at_a_time = self.creating.lock().await;
        if self.is_full().await {
            return Err(SessionError::Full(self.max));
        }
        Ok(self.inner.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, SessionError> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), SessionError> {
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), SessionError> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}
