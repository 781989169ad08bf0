//! Caps on open MCP sessions over HTTP, all of them and per token, and which token owns each:
//! rmcp's in-memory session manager, refusing to create a session past either cap.
//!
//! A session belongs to the token that initialized it. rmcp creates sessions without knowing
//! the request, so the gate runs the request inside [`as_token`] (a task-local the creation
//! reads, in the same task: rmcp awaits `create_session` in the request's own future); a
//! creation outside it is refused. The gate asks [`CappedSessions::owner`] before passing a
//! request that names a session, and refuses one created with another token.
//!
//! The HTTP layer checks [`CappedSessions::admits`] first so a client gets a clear 503 or 429;
//! the check in `create_session` (under a lock, so concurrent `initialize` requests cannot both
//! take the last slot) is what makes the caps hold. Sessions leave the counts when closed or
//! idle past the timeout (rmcp then calls `close_session`).
//!
//! Per-session state is bounded too: each request's stream keeps a replay cache of up to
//! `channel_capacity` (16) messages for clients that resume it; rmcp keeps a finished request's
//! cache for `completed_cache_ttl` (60 s by default), which lets a token's request *rate* set
//! a session's memory. We drop it when the request ends: a client that lost a response retries
//! the call rather than resuming a finished stream.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use tokio::sync::Mutex;

tokio::task_local! {
    /// The name of the token of the request being served.
    static TOKEN: Arc<str>;
}

/// Runs `request` as the token named `token`: sessions it creates belong to that token.
pub async fn as_token<F: Future>(token: &str, request: F) -> F::Output {
    TOKEN.scope(Arc::from(token), request).await
}

/// Why a new session is refused now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// `max` sessions are open already.
    #[error("{0} MCP sessions are open, the most this server allows; retry later")]
    Full(usize),
    /// The token holds its share of sessions already.
    #[error("this token holds {0} MCP sessions, the most one token may")]
    TokenShare(usize),
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A cap is reached.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// A session was to be created outside [`as_token`] (a bug: it would belong to nobody).
    #[error("a session was to be created without a token")]
    NoToken,
    /// rmcp's session manager failed.
    #[error(transparent)]
    Inner(#[from] LocalSessionManagerError),
}

/// rmcp's [`LocalSessionManager`] with caps on open sessions, all and per token.
#[derive(Debug)]
pub struct CappedSessions {
    inner: LocalSessionManager,
    max: usize,
    per_token: usize,
    creating: Mutex<()>,
    /// The token of each session created; pruned to the open sessions at each creation, so it
    /// holds at most `max` entries after one.
    owners: std::sync::Mutex<HashMap<SessionId, Arc<str>>>,
}

impl CappedSessions {
    /// At most `max` sessions, `per_token` of them for one token, each closed after `idle`
    /// without a request.
    pub fn new(max: usize, per_token: usize, idle: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        let mut config = SessionConfig::default();
        config.keep_alive = Some(idle);
        config.completed_cache_ttl = Duration::ZERO;
        inner.session_config = config;
        Self {
            inner,
            max,
            per_token,
            creating: Mutex::new(()),
            owners: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Sessions open now.
    pub async fn open(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    /// Whether `token` could create a session now (the caps, without taking a slot).
    pub async fn admits(&self, token: &str) -> Result<(), Refused> {
        let open = self.inner.sessions.read().await;
        if open.len() >= self.max {
            return Err(Refused::Full(self.max));
        }
        let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        owners.retain(|id, _| open.contains_key(id));
        if owners.values().filter(|owner| ***owner == *token).count() >= self.per_token {
            return Err(Refused::TokenShare(self.per_token));
        }
        Ok(())
    }

    /// The name of the token that created session `id`, if it is one of ours.
    pub fn owner(&self, id: &str) -> Option<Arc<str>> {
        let owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        owners.get(id).cloned()
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), SessionError> {
        let token = TOKEN.try_with(Arc::clone).map_err(|_| SessionError::NoToken)?;
        let _one_at_a_time = self.creating.lock().await;
        self.admits(&token).await?;
        let (id, transport) = self.inner.create_session().await?;
        let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        owners.insert(id.clone(), token);
        Ok((id, transport))
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
        self.inner.close_session(id).await?;
        self.owners.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    async fn create(sessions: &CappedSessions, token: &str) -> Result<SessionId, SessionError> {
        as_token(token, sessions.create_session()).await.map(|(id, _)| id)
    }

    #[tokio::test]
    async fn one_token_cannot_take_every_session_and_sessions_know_their_token() {
        let sessions = CappedSessions::new(4, 2, Duration::from_secs(60));
        let a1 = create(&sessions, "a").await.expect("a's first");
        create(&sessions, "a").await.expect("a's second");
        assert!(matches!(
            create(&sessions, "a").await,
            Err(SessionError::Refused(Refused::TokenShare(2)))
        ));
        assert_eq!(sessions.admits("a").await, Err(Refused::TokenShare(2)));
        sessions.admits("b").await.expect("b may");
        let b1 = create(&sessions, "b").await.expect("another token still gets one");
        create(&sessions, "b").await.expect("b's second");
        assert!(matches!(
            create(&sessions, "c").await,
            Err(SessionError::Refused(Refused::Full(4)))
        ));
        assert_eq!(sessions.owner(&a1).as_deref(), Some("a"));
        assert_eq!(sessions.owner(&b1).as_deref(), Some("b"));
        assert_eq!(sessions.owner("no-such-session"), None);
        sessions.close_session(&a1).await.expect("closed");
        assert_eq!(sessions.owner(&a1), None);
        create(&sessions, "a").await.expect("a closed one, so it may open one");
    }

    #[tokio::test]
    async fn a_session_is_never_created_without_a_token() {
        let sessions = CappedSessions::new(4, 2, Duration::from_secs(60));
        assert!(matches!(sessions.create_session().await, Err(SessionError::NoToken)));
        assert_eq!(sessions.open().await, 0);
    }
}
