//! The HMAC keys the gateway accepts chunks under, by key id (several at once, for rotation).
//!
//! On disk: a directory with one file per key, named `<key_id>.key`, holding the secret as hex
//! (at least 32 bytes, i.e. 64 hex digits; whitespace ignored). That is how a secret store
//! mounts several keys into a container, and rotating a key is adding a file, then removing the
//! old one once every collector has switched.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use zeroize::Zeroizing;

/// Shortest accepted MAC key, in bytes (the HMAC-SHA256 block of security).
pub(crate) const MIN_KEY_BYTES: usize = 32;

/// Longest accepted key id, in bytes.
pub(crate) const MAX_KEY_ID_BYTES: usize = 64;

/// Secret MAC keys by key id. Secrets are zeroized when dropped and never printed.
#[derive(Default)]
pub struct MacKeys {
    keys: HashMap<String, Zeroizing<Vec<u8>>>,
}

impl std::fmt::Debug for MacKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut ids: Vec<_> = self.keys.keys().collect();
        ids.sort();
        f.debug_struct("MacKeys").field("ids", &ids).finish_non_exhaustive()
    }
}

/// Why a key set could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The directory or a key file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A key file does not hold a valid key.
    #[error("{path}: {problem}")]
    Invalid {
        /// The offending file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A key id is empty, too long, or has characters outside [A-Za-z0-9._-].
    #[error("key id {0:?} must be 1..={MAX_KEY_ID_BYTES} characters of [A-Za-z0-9._-]")]
    BadId(String),
    /// The directory holds no `*.key` file.
    #[error("no *.key file in {0}")]
    Empty(PathBuf),
}

impl MacKeys {
    /// Loads every `<key_id>.key` file of `dir`.
    pub(crate) fn load_dir(dir: &Path) -> Result<Self, KeyError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| KeyError::Io { path, source }
        };
        let mut keys = Self::default();
        for entry in std::fs::read_dir(dir).map_err(io(dir))? {
            let path = entry.map_err(io(dir))?.path();
            let (Some(id), Some("key")) = (
                path.file_stem().and_then(|s| s.to_str()),
                path.extension().and_then(|e| e.to_str()),
            ) else {
                continue;
            };
            let text = Zeroizing::new(std::fs::read_to_string(&path).map_err(io(&path))?);
            let compact: Zeroizing<String> =
                Zeroizing::new(text.chars().filter(|c| !c.is_whitespace()).collect());
            let secret = hex::decode(compact.as_bytes()).map_err(|_| KeyError::Invalid {
                path: path.clone(),
                problem: "expected the secret as hex digits".into(),
            })?;
            keys.insert(id, secret).map_err(|e| match e {
                KeyError::Invalid { problem, .. } => {
                    KeyError::Invalid { path: path.clone(), problem }
                }
                other => other,
            })?;
        }
        if keys.keys.is_empty() {
            return Err(KeyError::Empty(dir.to_owned()));
        }
        Ok(keys)
    }

    /// Adds (or replaces) the key `id`.
    pub fn insert(&mut self, id: &str, secret: Vec<u8>) -> Result<(), KeyError> {
        let secret = Zeroizing::new(secret);
        if !valid_key_id(id) {
            return Err(KeyError::BadId(id.to_owned()));
        }
        if secret.len() < MIN_KEY_BYTES {
            return Err(KeyError::Invalid {
                path: PathBuf::from(id),
                problem: format!("key is {} bytes, at least {MIN_KEY_BYTES} needed", secret.len()),
            });
        }
        self.keys.insert(id.to_owned(), secret);
        Ok(())
    }

    /// The secret for `id`, if the gateway accepts that key.
    pub fn get(&self, id: &str) -> Option<&[u8]> {
        self.keys.get(id).map(|k| k.as_slice())
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when there are no keys.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Key ids are short, printable and safe in file names and logs.
pub(crate) fn valid_key_id(id: &str) -> bool {
    (1..=MAX_KEY_ID_BYTES).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_every_key_file_and_ignores_others() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("k1.key"), format!("{}\n", "ab".repeat(32))).expect("w");
        std::fs::write(dir.path().join("k2.key"), "cd".repeat(40)).expect("w");
        std::fs::write(dir.path().join("README"), "not a key").expect("w");
        let keys = MacKeys::load_dir(dir.path()).expect("loads");
        assert_eq!(keys.len(), 2);
        assert_eq!(keys.get("k1"), Some(&[0xAB; 32][..]));
        assert_eq!(keys.get("k2").map(<[u8]>::len), Some(40));
        assert_eq!(keys.get("k3"), None);
        assert!(!format!("{keys:?}").contains("abab"), "Debug never shows secrets");
    }

    #[test]
    fn short_or_malformed_keys_are_refused_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("short.key"), "ab".repeat(16)).expect("w");
        let err = MacKeys::load_dir(dir.path()).expect_err("too short").to_string();
        assert!(err.contains("short.key") && err.contains("at least 32"), "{err}");

        std::fs::write(dir.path().join("short.key"), "zz".repeat(32)).expect("w");
        let err = MacKeys::load_dir(dir.path()).expect_err("not hex").to_string();
        assert!(err.contains("short.key") && err.contains("hex"), "{err}");
    }

    #[test]
    fn empty_directory_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(matches!(MacKeys::load_dir(dir.path()), Err(KeyError::Empty(_))));
    }

    #[test]
    fn key_ids_are_restricted() {
        assert!(valid_key_id("k1") && valid_key_id("2026-11.a_b"));
        assert!(!valid_key_id("") && !valid_key_id("a/b") && !valid_key_id(&"k".repeat(65)));
    }
}
