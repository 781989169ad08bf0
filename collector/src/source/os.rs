//! The kernel CSPRNG (getrandom). Fast and always there, but not quantum and not a physical
//! source by itself: it is labelled `SOURCE_KIND_OS` everywhere.

use super::{Source, SourceError};
use crate::provenance::SourceKind;

/// Reads the operating system's CSPRNG.
#[derive(Debug, Clone)]
pub struct OsSource {
    name: String,
}

impl OsSource {
    /// An OS source called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into() }
    }
}

#[tonic::async_trait]
impl Source for OsSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Os
    }

    async fn read(&mut self, n: usize) -> Result<Vec<u8>, SourceError> {
        let mut buf = vec![0u8; n];
        getrandom::fill(&mut buf).map_err(|e| SourceError::Unreachable {
            name: self.name.clone(),
            message: e.to_string(),
        })?;
        Ok(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_exactly_what_is_asked() {
        let mut os = OsSource::new("os");
        let a = os.read(4096).await.expect("bytes");
        let b = os.read(4096).await.expect("bytes");
        assert_eq!(a.len(), 4096);
        assert_ne!(a, b, "two reads of 4 KiB do not repeat");
        assert_eq!(os.kind(), SourceKind::Os);
    }
}
