//! Client API keys: who may draw entropy.
//!
//! The gateway stores only the SHA-256 of each secret. A presented key is hashed and compared
//! with every stored digest in constant time (`subtle`), so the time taken says nothing about
//! which key, or how much of one, matched. Keys arrive in metadata only (see `grpc::auth`).
//!
//! Keys file (TOML):
//!
//! ```toml
//! [[key]]
//! name = "alice"                                   # shown in logs, never the secret
//! sha256 = "<64 hex digits: SHA-256 of the secret>"
//! ```

use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

/// Longest key accepted in a request, in bytes; longer ones are refused without hashing.
pub const MAX_PRESENTED_KEY_BYTES: usize = 512;

/// The known keys.
#[derive(Clone, Default)]
pub struct ApiKeys {
    keys: Vec<ApiKey>,
}

#[derive(Clone)]
struct ApiKey {
    name: String,
    digest: [u8; 32],
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.keys.iter().map(|k| &k.name).collect();
        f.debug_struct("ApiKeys").field("names", &names).finish_non_exhaustive()
    }
}

/// Why a keys file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ApiKeysError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not valid TOML of the expected shape.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// A key entry is invalid.
    #[error("{path}: key {name:?}: {problem}")]
    Invalid {
        /// The file.
        path: String,
        /// The key's name.
        name: String,
        /// What is wrong.
        problem: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysFile {
    #[serde(default)]
    key: Vec<KeyEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyEntry {
    name: String,
    sha256: String,
}

impl ApiKeys {
    /// Loads a keys file.
    pub fn load_file(path: &Path) -> Result<Self, ApiKeysError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| ApiKeysError::Io { path: shown.clone(), source })?;
        let file: KeysFile = toml::from_str(&text)
            .map_err(|e| ApiKeysError::Parse { path: shown.clone(), message: e.to_string() })?;
        let mut keys = Self::default();
        for entry in file.key {
            let invalid = |problem: &str| ApiKeysError::Invalid {
                path: shown.clone(),
                name: entry.name.clone(),
                problem: problem.to_owned(),
            };
            if !valid_name(&entry.name) {
                return Err(invalid("name must be 1..=64 characters of [A-Za-z0-9._-]"));
            }
            if keys.keys.iter().any(|k| k.name == entry.name) {
                return Err(invalid("name is used twice"));
            }
            let digest = hex::decode(entry.sha256.trim())
                .ok()
                .and_then(|d| <[u8; 32]>::try_from(d).ok())
                .ok_or_else(|| invalid("sha256 must be 64 hex digits"))?;
            keys.keys.push(ApiKey { name: entry.name, digest });
        }
        if keys.keys.is_empty() {
            return Err(ApiKeysError::Parse { path: shown, message: "no [[key]] entries".into() });
        }
        Ok(keys)
    }

    /// A key set holding one key, given by its secret (dev mode).
    pub fn single(name: &str, secret: &str) -> Self {
        Self { keys: vec![ApiKey { name: name.to_owned(), digest: digest(secret.as_bytes()) }] }
    }

    /// The name of the key `presented`, if it is one of ours.
    pub fn authenticate(&self, presented: &[u8]) -> Option<&str> {
        if presented.is_empty() || presented.len() > MAX_PRESENTED_KEY_BYTES {
            return None;
        }
        let wanted = digest(presented);
        // Look at every key whatever matches, selecting the match without branching on it.
        let mut found = subtle::Choice::from(0);
        let mut index = 0u32;
        for (i, key) in self.keys.iter().enumerate() {
            let hit = key.digest.ct_eq(&wanted);
            index.conditional_assign(&(i as u32), hit);
            found |= hit;
        }
        bool::from(found).then(|| self.keys[index as usize].name.as_str())
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when there is no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// SHA-256 of a secret, as stored in keys files.
pub fn digest(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_file(text: &str) -> Result<ApiKeys, ApiKeysError> {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), text).expect("write");
        ApiKeys::load_file(file.path())
    }

    #[test]
    fn authenticates_by_secret_and_names_the_key() {
        let text = format!(
            "[[key]]\nname = \"alice\"\nsha256 = \"{}\"\n[[key]]\nname = \"bob\"\nsha256 = \"{}\"\n",
            hex::encode(digest(b"alice-secret")),
            hex::encode(digest(b"bob-secret")),
        );
        let keys = keys_file(&text).expect("valid file");
        assert_eq!(keys.authenticate(b"alice-secret"), Some("alice"));
        assert_eq!(keys.authenticate(b"bob-secret"), Some("bob"));
        assert_eq!(keys.authenticate(b"bob-secret "), None);
        assert_eq!(keys.authenticate(b""), None);
        assert_eq!(keys.authenticate(&[b'a'; MAX_PRESENTED_KEY_BYTES + 1]), None);
        assert!(!format!("{keys:?}").contains(&hex::encode(digest(b"bob-secret"))));
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let err = keys_file("[[key]]\nname = \"a\"\nsha256 = \"xyz\"\n").unwrap_err().to_string();
        assert!(err.contains("\"a\"") && err.contains("64 hex digits"), "{err}");
        let err = keys_file("[[key]]\nname = \"a\"\nsha = \"00\"\n").unwrap_err().to_string();
        assert!(err.contains("unknown field"), "{err}");
        let err = keys_file("").unwrap_err().to_string();
        assert!(err.contains("no [[key]]"), "{err}");
        let h = hex::encode([0u8; 32]);
        let dup =
            format!("[[key]]\nname=\"a\"\nsha256=\"{h}\"\n[[key]]\nname=\"a\"\nsha256=\"{h}\"\n");
        assert!(keys_file(&dup).unwrap_err().to_string().contains("twice"));
    }
}
