//! Bearer tokens for the HTTP transport, stored as SHA-256 digests (like the gateway's keys).
//!
//! A presented token is hashed and compared with every stored digest in constant time
//! (`subtle`), so timing says nothing about which token, or how much of one, matched. The file
//! never holds a token, only its digest.
//!
//! Tokens file (TOML):
//!
//! ```toml
//! [[token]]
//! name = "laptop"                                  # shown in logs, never the token
//! sha256 = "<64 hex digits: SHA-256 of the token>"
//! ```
//!
//! `entropy-mcp token --name laptop` makes a token, prints it once, and prints its entry.

use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

/// Longest token accepted in a request, in bytes; longer ones are refused without hashing.
pub const MAX_TOKEN_BYTES: usize = 512;

/// The accepted tokens.
#[derive(Clone)]
pub struct Tokens {
    entries: Vec<(String, [u8; 32])>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.entries.iter().map(|(n, _)| n).collect();
        f.debug_struct("Tokens").field("names", &names).finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    #[serde(default)]
    token: Vec<TokenEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenEntry {
    name: String,
    sha256: String,
}

/// Why a tokens file could not be loaded; the message names the file and the entry at fault.
#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not valid TOML of the tokens file's shape.
    #[error("{path}: {source}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's error.
        source: toml::de::Error,
    },
    /// An entry's name is not 1..=64 characters of `[A-Za-z0-9._-]`.
    #[error("{path}: token {name:?}: name must be 1..=64 characters of [A-Za-z0-9._-]")]
    Name {
        /// The file.
        path: String,
        /// The entry's name.
        name: String,
    },
    /// Two entries have the same name.
    #[error("{path}: token {name:?}: name is used twice")]
    Duplicate {
        /// The file.
        path: String,
        /// The name used twice.
        name: String,
    },
    /// An entry's `sha256` is not 64 hex digits.
    #[error("{path}: token {name:?}: sha256 must be 64 hex digits")]
    Digest {
        /// The file.
        path: String,
        /// The entry's name.
        name: String,
    },
    /// The file has no entry.
    #[error("{path}: no [[token]] entries")]
    Empty {
        /// The file.
        path: String,
    },
}

impl Tokens {
    /// Loads a tokens file; the error names the file and the entry at fault.
    pub fn load_file(path: &Path) -> Result<Self, TokensError> {
        let shown = || path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| TokensError::Read { path: shown(), source })?;
        let file: TokensFile =
            toml::from_str(&text).map_err(|source| TokensError::Parse { path: shown(), source })?;
        let mut entries: Vec<(String, [u8; 32])> = Vec::new();
        for entry in file.token {
            if !valid_name(&entry.name) {
                return Err(TokensError::Name { path: shown(), name: entry.name });
            }
            if entries.iter().any(|(n, _)| *n == entry.name) {
                return Err(TokensError::Duplicate { path: shown(), name: entry.name });
            }
            let Some(digest) =
                hex::decode(entry.sha256.trim()).ok().and_then(|d| <[u8; 32]>::try_from(d).ok())
            else {
                return Err(TokensError::Digest { path: shown(), name: entry.name });
            };
            entries.push((entry.name, digest));
        }
        if entries.is_empty() {
            return Err(TokensError::Empty { path: shown() });
        }
        Ok(Self { entries })
    }

    /// The name of the token `presented`, if it is one of ours.
    pub fn authenticate(&self, presented: &[u8]) -> Option<&str> {
        if presented.is_empty() || presented.len() > MAX_TOKEN_BYTES {
            return None;
        }
        let wanted: [u8; 32] = Sha256::digest(presented).into();
        // Compare with every entry whatever matches, selecting the match without branching.
        let mut found = subtle::Choice::from(0);
        let mut index = 0u32;
        for (i, (_, digest)) in self.entries.iter().enumerate() {
            let hit = digest.ct_eq(&wanted);
            index.conditional_assign(&(i as u32), hit);
            found |= hit;
        }
        bool::from(found).then(|| self.entries[index as usize].0.as_str())
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there is no token (never, once loaded).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Why a token could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenerateError {
    /// The name is not 1..=64 characters of `[A-Za-z0-9._-]`.
    #[error("name must be 1..=64 characters of [A-Za-z0-9._-]")]
    Name,
    /// The OS RNG could not be read.
    #[error("cannot read the OS RNG: {0}")]
    Rng(getrandom::Error),
}

/// A new token (`emt_` + 64 hex digits from the OS RNG: a local secret must not depend on the
/// gateway) and its tokens-file entry.
pub fn generate(name: &str) -> Result<(String, String), GenerateError> {
    if !valid_name(name) {
        return Err(GenerateError::Name);
    }
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).map_err(GenerateError::Rng)?;
    let token = format!("emt_{}", hex::encode(raw));
    let entry = format!(
        "[[token]]\nname = \"{name}\"\nsha256 = \"{}\"\n",
        hex::encode(Sha256::digest(token.as_bytes()))
    );
    Ok((token, entry))
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Tokens, TokensError> {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), text).expect("write");
        Tokens::load_file(file.path())
    }

    fn entry(name: &str, token: &str) -> String {
        format!(
            "[[token]]\nname = \"{name}\"\nsha256 = \"{}\"\n",
            hex::encode(Sha256::digest(token))
        )
    }

    #[test]
    fn authenticates_by_token_and_names_it() {
        let tokens = load(&(entry("a", "token-a") + &entry("b", "token-b"))).expect("valid");
        assert_eq!(tokens.authenticate(b"token-a"), Some("a"));
        assert_eq!(tokens.authenticate(b"token-b"), Some("b"));
        assert_eq!(tokens.authenticate(b"token-b "), None);
        assert_eq!(tokens.authenticate(b""), None);
        assert_eq!(tokens.authenticate(&[b'x'; MAX_TOKEN_BYTES + 1]), None);
        assert!(!format!("{tokens:?}").contains(&hex::encode(Sha256::digest("token-a"))));
    }

    #[test]
    fn bad_files_are_refused_with_the_entry_named() {
        let err = |text: &str| load(text).unwrap_err().to_string();
        assert!(err("").contains("no [[token]] entries"));
        assert!(err("[[token]]\nname = \"x\"\nsha256 = \"abc\"\n").contains("64 hex"));
        assert!(err(&(entry("x", "1") + &entry("x", "2"))).contains("used twice"));
        assert!(err(&entry("bad name", "1")).contains("[A-Za-z0-9._-]"));
        assert!(load("[[token]]\nname = \"x\"\nsecret = \"y\"\n").is_err());
    }

    #[test]
    fn errors_name_the_file_and_the_entry_in_full() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        let shown = file.path().display().to_string();
        let err = |text: &str| {
            std::fs::write(file.path(), text).expect("write");
            Tokens::load_file(file.path()).unwrap_err().to_string()
        };
        assert_eq!(err(""), format!("{shown}: no [[token]] entries"));
        assert_eq!(
            err("[[token]]\nname = \"x\"\nsha256 = \"abc\"\n"),
            format!("{shown}: token \"x\": sha256 must be 64 hex digits")
        );
        assert_eq!(
            err(&(entry("x", "1") + &entry("x", "2"))),
            format!("{shown}: token \"x\": name is used twice")
        );
        assert_eq!(
            err(&entry("a b", "1")),
            format!("{shown}: token \"a b\": name must be 1..=64 characters of [A-Za-z0-9._-]")
        );
        let parse = err("[[token]]\nname = \"x\"\nsecret = \"y\"\n");
        assert!(parse.starts_with(&format!("{shown}: ")) && parse.contains("secret"), "{parse}");
        let missing = file.path().with_extension("missing");
        let read = Tokens::load_file(&missing).unwrap_err().to_string();
        assert!(read.starts_with(&format!("cannot read {}: ", missing.display())), "{read}");
        assert_eq!(
            generate("no spaces").unwrap_err().to_string(),
            "name must be 1..=64 characters of [A-Za-z0-9._-]"
        );
    }

    #[test]
    fn generated_tokens_load_and_authenticate() {
        let (token, entry) = generate("laptop").expect("token");
        assert!(token.starts_with("emt_") && token.len() == 68);
        assert!(!entry.contains(&token), "the entry never holds the token");
        let tokens = load(&entry).expect("the printed entry is valid");
        assert_eq!(tokens.authenticate(token.as_bytes()), Some("laptop"));
        assert!(generate("no spaces").is_err());
    }
}
