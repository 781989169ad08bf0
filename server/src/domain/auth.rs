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
//! scopes = ["entropy:read", "status:read"]         # optional; this is the default; also
//!                                                  # "quality:check" (CheckQuality) and
//!                                                  # "entropy:drbg" (DRBG constructions),
//!                                                  # "entropy:receipts" (a receipt with
//!                                                  # every draw), "receipts:audit"
//!                                                  # (ListReceipts)
//! requests_per_second = 100                        # optional limits; absent = unlimited
//! bytes_per_second = 10000000
//! drbg_bytes_per_second = 100000000                # DRBG output (its seeds: bytes_per_second)
//! max_streams = 4
//! max_undelivered_bytes = 33554432                 # drawn, not yet taken by the transport;
//!                                                  # default 32 MiB, at least 1 MiB
//! ```
//!
//! `entropy-gateway keygen --name alice` makes a secret and prints it once, with its entry.

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use crate::domain::quota::{KeyQuota, Limits};

/// Longest key accepted in a request, in bytes; longer ones are refused without hashing.
pub(crate) const MAX_PRESENTED_KEY_BYTES: usize = 512;

/// The known keys.
#[derive(Clone, Default)]
pub struct ApiKeys {
    keys: Vec<ApiKey>,
}

#[derive(Clone)]
struct ApiKey {
    digest: [u8; 32],
    grant: Arc<KeyGrant>,
}

/// What a scope allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Draw entropy: GetRandom, StreamRandom, GetIntegers, GetFloats, GetUuids.
    EntropyRead,
    /// Read GetStatus.
    StatusRead,
    /// Run CheckQuality (draws bytes that are tested and wiped, never served).
    QualityCheck,
    /// Ask for a DRBG construction (DRBG output seeded from the pool) on an entropy call.
    EntropyDrbg,
    /// StreamRandom alone, for a host feeder (`entropy-feeder`): a key holding only this scope
    /// can stream pool bytes and call nothing else.
    EntropyFeed,
    /// Every draw of this key gets a receipt, asked for or not (so every draw it makes is in
    /// the receipt log); its StreamRandom calls are refused (streams issue no receipts).
    EntropyReceipts,
    /// List the receipt log's receipts (ReceiptLogService.ListReceipts): an auditor's key.
    ReceiptsAudit,
}

impl Scope {
    /// The scope's name in keys files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EntropyRead => "entropy:read",
            Self::StatusRead => "status:read",
            Self::QualityCheck => "quality:check",
            Self::EntropyDrbg => "entropy:drbg",
            Self::EntropyFeed => "entropy:feed",
            Self::EntropyReceipts => "entropy:receipts",
            Self::ReceiptsAudit => "receipts:audit",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [
            Self::EntropyRead,
            Self::StatusRead,
            Self::QualityCheck,
            Self::EntropyDrbg,
            Self::EntropyFeed,
            Self::EntropyReceipts,
            Self::ReceiptsAudit,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// An authenticated key: its name (for logs), what it may do, and its live quota.
#[derive(Debug)]
pub struct KeyGrant {
    /// The key's name.
    pub name: String,
    /// Its scopes.
    pub scopes: Vec<Scope>,
    /// Its quota state, shared with the key's successor when the keys file is reloaded.
    pub quota: Arc<KeyQuota>,
}

impl KeyGrant {
    /// True when the key holds `scope`.
    pub fn allows(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.keys.iter().map(|k| &k.grant.name).collect();
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
    scopes: Option<Vec<String>>,
    requests_per_second: Option<u32>,
    bytes_per_second: Option<u32>,
    drbg_bytes_per_second: Option<u32>,
    max_streams: Option<usize>,
    max_undelivered_bytes: Option<usize>,
}

impl ApiKeys {
    /// Loads a keys file.
    pub fn load_file(path: &Path) -> Result<Self, ApiKeysError> {
        Self::reload_file(path, &Self::default())
    }

    /// Loads a keys file to replace `previous` (SIGHUP). A key whose name was in `previous`
    /// keeps its quota state ([`KeyQuota::carry_over`]), also when its secret was rotated, so a
    /// reload neither refills a throttled key's buckets nor forgets the streams it has open.
    pub(crate) fn reload_file(path: &Path, previous: &ApiKeys) -> Result<Self, ApiKeysError> {
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
            if keys.keys.iter().any(|k| k.grant.name == entry.name) {
                return Err(invalid("name is used twice"));
            }
            let digest = hex::decode(entry.sha256.trim())
                .ok()
                .and_then(|d| <[u8; 32]>::try_from(d).ok())
                .ok_or_else(|| invalid("sha256 must be 64 hex digits"))?;
            let mut scopes = Vec::new();
            for text in
                entry.scopes.as_deref().unwrap_or(&["entropy:read".into(), "status:read".into()])
            {
                let scope = Scope::parse(text).ok_or_else(|| {
                    invalid(&format!(
                        "unknown scope {text:?} (known: entropy:read, status:read, quality:check, \
                         entropy:drbg)"
                    ))
                })?;
                scopes.push(scope);
            }
            let positive = |v: Option<u32>, what: &str| match v {
                None => Ok(None),
                Some(n) => NonZeroU32::new(n)
                    .map(Some)
                    .ok_or_else(|| invalid(&format!("{what} must be at least 1"))),
            };
            let limits = Limits {
                requests_per_second: positive(entry.requests_per_second, "requests_per_second")?,
                bytes_per_second: positive(entry.bytes_per_second, "bytes_per_second")?,
                drbg_bytes_per_second: positive(
                    entry.drbg_bytes_per_second,
                    "drbg_bytes_per_second",
                )?,
                max_streams: entry.max_streams,
                max_undelivered_bytes: match entry.max_undelivered_bytes {
                    Some(n) if n < crate::domain::quota::MIN_MAX_UNDELIVERED_BYTES => {
                        return Err(invalid(&format!(
                            "max_undelivered_bytes is {n}, must be at least {}",
                            crate::domain::quota::MIN_MAX_UNDELIVERED_BYTES
                        )));
                    }
                    other => other,
                },
            };
            let quota = match previous.grant_named(&entry.name) {
                Some(old) => KeyQuota::carry_over(&old.quota, limits),
                None => Arc::new(KeyQuota::new(limits)),
            };
            let grant = KeyGrant { name: entry.name, scopes, quota };
            keys.keys.push(ApiKey { digest, grant: Arc::new(grant) });
        }
        if keys.keys.is_empty() {
            return Err(ApiKeysError::Parse { path: shown, message: "no [[key]] entries".into() });
        }
        Ok(keys)
    }

    /// A key set holding one key with every scope but `entropy:receipts` (which would refuse
    /// its streams), given by its secret (dev mode).
    pub fn single(name: &str, secret: &str) -> Self {
        let grant = KeyGrant {
            name: name.to_owned(),
            scopes: vec![
                Scope::EntropyRead,
                Scope::StatusRead,
                Scope::QualityCheck,
                Scope::EntropyDrbg,
                Scope::EntropyFeed,
                Scope::ReceiptsAudit,
            ],
            quota: Arc::new(KeyQuota::new(Limits::default())),
        };
        Self { keys: vec![ApiKey { digest: digest(secret.as_bytes()), grant: Arc::new(grant) }] }
    }

    /// The grant of the key `presented`, if it is one of ours.
    pub(crate) fn authenticate(&self, presented: &[u8]) -> Option<&Arc<KeyGrant>> {
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
        bool::from(found).then(|| &self.keys[index as usize].grant)
    }

    fn grant_named(&self, name: &str) -> Option<&Arc<KeyGrant>> {
        self.keys.iter().map(|k| &k.grant).find(|g| g.name == name)
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

/// A new key: a random secret (shown once, never stored by the gateway) and the keys-file
/// entry holding its SHA-256.
pub fn generate_key(name: &str) -> Result<(String, String), KeygenError> {
    if !valid_name(name) {
        return Err(KeygenError::Name);
    }
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).map_err(KeygenError::Rng)?;
    let secret = format!("edk_{}", hex::encode(raw));
    let entry = format!(
        "[[key]]\nname = \"{name}\"\nsha256 = \"{}\"\nscopes = [\"entropy:read\", \"status:read\"]\n",
        hex::encode(digest(secret.as_bytes()))
    );
    Ok((secret, entry))
}

/// Why no key was made.
#[derive(Debug, thiserror::Error)]
pub enum KeygenError {
    /// The name is not one a keys file accepts.
    #[error("name must be 1..=64 characters of [A-Za-z0-9._-]")]
    Name,
    /// The OS random generator failed.
    #[error("the OS random generator failed: {0}")]
    Rng(getrandom::Error),
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
    use crate::domain::quota::QuotaError;

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
        assert_eq!(keys.authenticate(b"alice-secret").map(|g| g.name.as_str()), Some("alice"));
        assert_eq!(keys.authenticate(b"bob-secret").map(|g| g.name.as_str()), Some("bob"));
        assert!(keys.authenticate(b"bob-secret ").is_none());
        assert!(keys.authenticate(b"").is_none());
        assert!(keys.authenticate(&[b'a'; MAX_PRESENTED_KEY_BYTES + 1]).is_none());
        assert!(!format!("{keys:?}").contains(&hex::encode(digest(b"bob-secret"))));
    }

    #[test]
    fn scopes_and_limits_are_read() {
        let text = format!(
            "[[key]]\nname = \"s\"\nsha256 = \"{}\"\nscopes = [\"status:read\"]\nrequests_per_second = 7\nmax_streams = 2\n",
            hex::encode(digest(b"s"))
        );
        let keys = keys_file(&text).expect("valid");
        let grant = keys.authenticate(b"s").expect("known");
        assert!(grant.allows(Scope::StatusRead) && !grant.allows(Scope::EntropyRead));
        assert_eq!(grant.quota.limits().requests_per_second.map(|n| n.get()), Some(7));
        assert_eq!(grant.quota.limits().max_streams, Some(2));
        assert_eq!(grant.quota.limits().bytes_per_second, None);

        let bad = text.replace("status:read", "status:write");
        assert!(keys_file(&bad).unwrap_err().to_string().contains("unknown scope"));
        let zero = text.replace("requests_per_second = 7", "requests_per_second = 0");
        assert!(keys_file(&zero).unwrap_err().to_string().contains("at least 1"));
    }

    #[test]
    fn generated_keys_load_and_authenticate() {
        let (secret, entry) = generate_key("new-key").expect("key");
        let keys = keys_file(&entry).expect("the printed entry is valid");
        assert_eq!(keys.authenticate(secret.as_bytes()).map(|g| g.name.as_str()), Some("new-key"));
        assert!(!entry.contains(&secret), "the entry never holds the secret");
        assert!(generate_key("bad name").is_err());
    }

    #[test]
    fn a_reload_keeps_the_quota_state_of_each_key_by_name() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        let write = |entries: &[(&str, &[u8], &str)]| {
            let text: String = entries
                .iter()
                .map(|(name, secret, limits)| {
                    format!(
                        "[[key]]\nname = \"{name}\"\nsha256 = \"{}\"\n{limits}\n",
                        hex::encode(digest(secret))
                    )
                })
                .collect();
            std::fs::write(file.path(), text).expect("write");
        };
        let limits = "requests_per_second = 1\nmax_streams = 1";
        write(&[("alice", b"a1", limits), ("bob", b"b1", limits)]);
        let first = ApiKeys::load_file(file.path()).expect("valid");
        let alice = first.authenticate(b"a1").expect("alice");
        alice.quota.admit_request().expect("first call of the second");
        let stream = alice.quota.open_stream().expect("first stream");
        let bob = first.authenticate(b"b1").expect("bob");
        bob.quota.admit_request().expect("bob's call");

        // Same limits, alice's secret rotated, bob renamed carol: alice is still throttled and
        // at her stream cap; carol is a new key with fresh buckets.
        write(&[("alice", b"a2", limits), ("carol", b"b1", limits)]);
        let second = ApiKeys::reload_file(file.path(), &first).expect("valid");
        assert!(second.authenticate(b"a1").is_none(), "the old secret is gone");
        let alice = second.authenticate(b"a2").expect("alice, rotated");
        assert!(matches!(alice.quota.admit_request(), Err(QuotaError::Requests { .. })));
        assert!(matches!(alice.quota.open_stream(), Err(QuotaError::Streams { limit: 1 })));
        let carol = second.authenticate(b"b1").expect("carol");
        assert!(carol.quota.admit_request().is_ok(), "a renamed key starts afresh");

        // New limits: fresh buckets, but the open stream still counts against the new cap.
        write(&[("alice", b"a2", "requests_per_second = 5\nmax_streams = 2")]);
        let third = ApiKeys::reload_file(file.path(), &second).expect("valid");
        let alice = third.authenticate(b"a2").expect("alice");
        assert!(alice.quota.admit_request().is_ok(), "new limits, new buckets");
        let second_stream = alice.quota.open_stream().expect("two of two");
        assert!(matches!(alice.quota.open_stream(), Err(QuotaError::Streams { limit: 2 })));
        drop(stream);
        assert_eq!(alice.quota.open_streams(), 1, "the first key's stream closed");
        drop(second_stream);
        assert_eq!(alice.quota.open_streams(), 0);

        // Without a previous set (a first load), every key starts afresh.
        write(&[("alice", b"a2", limits)]);
        let fresh = ApiKeys::load_file(file.path()).expect("valid");
        assert!(fresh.authenticate(b"a2").expect("alice").quota.admit_request().is_ok());
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
