//! A character device or FIFO: `/dev/hwrng`, a Quantis PCIe/USB `/dev/qrandom0`, a pipe.
//!
//! Reads block (a virtio hwrng gives ~12 KB/s), so they run on tokio's blocking pool, never on
//! an async worker. The file stays open between reads; a read still blocked when the next one
//! is asked for makes the source unreachable until it returns.

use std::fs::File;
use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::{Source, SourceError, sanity};
use crate::provenance::SourceKind;

/// Reads a device file.
#[derive(Debug)]
pub struct DeviceSource {
    name: String,
    kind: SourceKind,
    path: PathBuf,
    file: Arc<Mutex<Option<File>>>,
}

impl DeviceSource {
    /// A source reading `path`, labelled `kind` (QUANTUM for a Quantis card, HARDWARE for a
    /// TPM or virtio RNG).
    pub fn new(name: impl Into<String>, kind: SourceKind, path: impl Into<PathBuf>) -> Self {
        Self { name: name.into(), kind, path: path.into(), file: Arc::new(Mutex::new(None)) }
    }
}

#[tonic::async_trait]
impl Source for DeviceSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> SourceKind {
        self.kind
    }

    async fn read(&mut self, n: usize) -> Result<Vec<u8>, SourceError> {
        let (file, path, name) = (self.file.clone(), self.path.clone(), self.name.clone());
        let unreachable =
            |message: String| SourceError::Unreachable { name: name.clone(), message };
        let result = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, String> {
            // try_lock: a read still blocked on the device holds the lock.
            let mut guard =
                file.try_lock().map_err(|_| "previous read still blocked".to_owned())?;
            if guard.is_none() {
                *guard =
                    Some(File::open(&path).map_err(|e| format!("open {}: {e}", path.display()))?);
            }
            let f = guard.as_mut().ok_or("device not open")?;
            let mut buf = vec![0u8; n];
            if let Err(e) = f.read_exact(&mut buf) {
                *guard = None; // reopen next time (a FIFO's writer may come back)
                return Err(format!("read {}: {e}", path.display()));
            }
            Ok(buf)
        })
        .await
        .map_err(|e| unreachable(e.to_string()))?
        .map_err(unreachable)?;
        sanity(&self.name, n, &result)?;
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[tokio::test]
    async fn reads_a_file_in_order_and_reports_its_end() {
        let mut file = tempfile::NamedTempFile::new().expect("temp");
        let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        file.write_all(&data).expect("write");
        let mut dev = DeviceSource::new("dev", SourceKind::Hardware, file.path());
        assert_eq!(dev.read(600).await.expect("bytes"), data[..600]);
        let end = dev.read(600).await.expect_err("only 400 left");
        assert!(matches!(end, SourceError::Unreachable { .. }), "{end:?}");
        assert_eq!(dev.kind(), SourceKind::Hardware);
    }

    #[tokio::test]
    async fn constant_output_fails_the_sanity_check() {
        let mut file = tempfile::NamedTempFile::new().expect("temp");
        file.write_all(&[0u8; 4096]).expect("write");
        let mut dev = DeviceSource::new("zeros", SourceKind::Hardware, file.path());
        let err = dev.read(4096).await.expect_err("constant");
        assert!(matches!(
            err,
            SourceError::Insane { check: super::super::SanityCheck::Constant, .. }
        ));
    }

    #[tokio::test]
    async fn missing_device_is_unreachable() {
        let mut dev = DeviceSource::new("none", SourceKind::Quantum, "/nonexistent/qrandom0");
        assert!(matches!(dev.read(16).await, Err(SourceError::Unreachable { .. })));
    }
}
